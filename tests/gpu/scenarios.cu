// scenarios: the process shapes that leave GPU memory behind (docs/reference.md), made
// on purpose so tests/gpu/run.sh can check what gpuclean says about each. One binary, one mode
// per run; every process it creates ends itself after a lifetime, so a crashed test run never
// leaves a GPU dirty for longer than that.
//
//   scenarios leftover MIB READY        live process holding MIB (MIB 0: context only)
//   scenarios heir MIB READY            fork after CUDA init, parent exits: "CHILD PARENT"
//   scenarios unmapped-heir MIB READY   the same, in the parent's own process group; the child
//                                       unmaps the device: "CHILD PARENT UNMAPPED"
//   scenarios zombie-leader MIB READY   main thread pthread_exit()s, a worker lives on: "PID"
//   scenarios zombie READY              a CUDA child exits, never reaped: "CHILD PARENT"
//   scenarios ipc MIB READY             exporter + IPC importer: "EXPORTER IMPORTER"
//   scenarios server N MIB READY        parent with N workers of MIB each: "PARENT W1 .. WN"
//   scenarios ctx-server N MIB READY    the same, and the parent makes a context of its own once
//                                       its workers have their memory (a holder: the root of
//                                       the tree `kill --leftovers` must end whole, issue 47)
//   scenarios busy-zombie-leader MIB READY  zombie-leader whose worker thread spins kernels
//                                       without end: a rank waiting on a dead peer: "PID"
//
// READY is a file written once the shape exists: the PIDs to check, space separated, or a line
// "error: ..." when the scenario could not be built. Besides, every process appends
// "PID STARTTIME" to READY.pids as it starts, so run.sh can end a scenario that failed or was
// interrupted half-way, by PID and never a recycled one. Lifetime: $GPUCLEAN_SCENARIO_LIFETIME
// seconds (default 120).
//
// Build: nvcc -O2 -o scenarios tests/gpu/scenarios.cu -lpthread
// Only plain cudaMalloc memory is used: managed memory is accounted differently by NVML and
// would test something else. The only kernel is busy modes' spin loop (clock64: every
// architecture since Fermi).

#include <cuda_runtime.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* g_ready_path = nullptr;
unsigned g_lifetime_s = 120;

// run.sh polls for READY and must never read half a line: write a private file, then rename
// it over READY (rename is atomic within a file system).
bool write_ready(const std::string& line) {
  const std::string tmp = std::string(g_ready_path) + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const std::string text = line + "\n";
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = close(fd) == 0;
  if (!written || !closed) return false;
  return rename(tmp.c_str(), g_ready_path) == 0;
}

// _exit, never exit: atexit handlers would run the CUDA runtime's teardown in whatever state
// this process is in (a forked child, a half-built shape) and could change what is measured.
// The first error reported wins: a server parent noticing a dead worker must not hide the
// worker's own, more precise message.
[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "scenarios[%d]: %s\n", static_cast<int>(getpid()), what.c_str());
  if (g_ready_path != nullptr && access(g_ready_path, F_OK) != 0) write_ready("error: " + what);
  _exit(1);
}

void cuda_check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(error));
}

// alarm() is not inherited across fork(), so every process this program creates arms its own.
void arm_lifetime() {
  alarm(g_lifetime_s);
}

// Appends "PID STARTTIME" (stat field 22) to READY.pids. O_APPEND keeps the lines of
// concurrent workers whole. Best effort: the lifetime still ends a process this misses.
void note_self() {
  char stat[1024] = {};
  const int in = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (in < 0) return;
  const ssize_t n = read(in, stat, sizeof(stat) - 1);
  close(in);
  if (n <= 0) return;
  // Field 22 is the 20th after the state, which follows the LAST ')' (comm may hold ')').
  const char* p = std::strrchr(stat, ')');
  for (int field = 2; p != nullptr && field < 22; ++field) p = std::strchr(p + 1, ' ');
  if (p == nullptr) return;
  const std::string line =
      std::to_string(getpid()) + " " + std::string(p + 1, std::strcspn(p + 1, " ")) + "\n";
  const std::string path = std::string(g_ready_path) + ".pids";
  const int out = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (out < 0) return;
  if (write(out, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    std::fprintf(stderr, "scenarios[%d]: cannot note pid in %s\n", static_cast<int>(getpid()),
                 path.c_str());
  }
  close(out);
}

[[noreturn]] void sleep_until_killed() {
  for (;;) pause();
}

// Creates the context on GPU 0 and, for mib > 0, allocates and touches mib MiB there.
void* allocate(unsigned long mib) {
  cuda_check(cudaSetDevice(0), "cudaSetDevice(0)");
  cuda_check(cudaFree(nullptr), "creating the CUDA context");
  if (mib == 0) return nullptr;
  void* p = nullptr;
  const size_t bytes = static_cast<size_t>(mib) << 20;
  cuda_check(cudaMalloc(&p, bytes), "cudaMalloc");
  // cudaMalloc already commits device memory; the memset makes it real CUDA work anyway, so
  // nothing depends on how lazily a future driver backs an allocation.
  cuda_check(cudaMemset(p, 0, bytes), "cudaMemset");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return p;
}

// State letter of a process from /proc/PID/stat; '?' if unreadable. The comm field may hold
// spaces and ')', so the state is found after the LAST ')'.
char proc_state(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return '?';
  char buffer[1024];
  const size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, f);
  std::fclose(f);
  buffer[n] = '\0';
  const char* paren = std::strrchr(buffer, ')');
  if (paren == nullptr || paren[1] != ' ' || paren[2] == '\0') return '?';
  return paren[2];
}

// Reads or writes exactly n bytes; a pipe may hand over less in one call.
bool read_all(int fd, void* data, size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

// fork() whose child is set up like every process here: noted in READY.pids, lifetime armed.
pid_t fork_or_fail() {
  // Nothing buffered may be written twice by parent and child.
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) fail(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    note_self();
    arm_lifetime();
  }
  return pid;
}

// ---- scenarios -------------------------------------------------------------------------------

// Problem 1: a process that simply keeps its memory.
[[noreturn]] void leftover(unsigned long mib) {
  allocate(mib);
  if (!write_ready(std::to_string(getpid()))) fail("cannot write the ready file");
  sleep_until_killed();
}

// Keeps every SM busy for about CYCLES clocks.
__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// Issue 37: a holder at work, as busy as a kernel can keep the SMs, until killed (the lifetime
// alarm bounds it).
[[noreturn]] void spin_forever();

[[noreturn]] void busy(unsigned long mib) {
  allocate(mib);
  if (!write_ready(std::to_string(getpid()))) fail("cannot write the ready file");
  spin_forever();
}

// Problem 3: the child of a fork after CUDA init keeps the context alive when the parent dies,
// and NVML goes on naming the dead parent's PID.
[[noreturn]] void heir(unsigned long mib) {
  allocate(mib);
  // Taken before fork: after the parent is gone, getppid() in the child no longer says who it was.
  const pid_t parent = getpid();
  if (fork_or_fail() > 0) {
    // The parent dies at once and without the runtime's teardown, like a crashed launcher.
    _exit(0);
  }
  // Re-parenting happens when the parent exits, so a changed getppid() means it is gone (its
  // reaping is up to run.sh, whose child it was). The lifetime alarm bounds this loop.
  while (getppid() == parent) usleep(10 * 1000);
  if (!write_ready(std::to_string(getpid()) + " " + std::to_string(parent))) {
    fail("cannot write the ready file");
  }
  sleep_until_killed();
}

// Issue 21 item 3's question: an heir that keeps the device files open but maps none of them
// (the shape a user could use to pass for a monitor). The parent leads its own process group
// (so the child's group ID is the dead parent's: the strong tie), allocates, forks and exits;
// the child unmaps every /dev/nvidia* mapping it inherited, keeps the descriptors and reports
// "CHILD PARENT UNMAPPED_COUNT".
[[noreturn]] void unmapped_heir(unsigned long mib) {
  if (setpgid(0, 0) != 0) fail(std::string("setpgid: ") + std::strerror(errno));
  allocate(mib);
  const pid_t parent = getpid();
  if (fork_or_fail() > 0) _exit(0);
  while (getppid() == parent) usleep(10 * 1000);
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) fail("cannot read /proc/self/maps");
  std::vector<std::pair<unsigned long, unsigned long>> regions;
  char line[4096];
  while (std::fgets(line, sizeof(line), maps) != nullptr) {
    if (std::strstr(line, " /dev/nvidia") == nullptr) continue;
    unsigned long start = 0;
    unsigned long end = 0;
    if (std::sscanf(line, "%lx-%lx", &start, &end) == 2) regions.emplace_back(start, end);
  }
  std::fclose(maps);
  for (const auto& [start, end] : regions) {
    munmap(reinterpret_cast<void*>(start), end - start);
  }
  if (!write_ready(std::to_string(getpid()) + " " + std::to_string(parent) + " " +
                   std::to_string(regions.size()))) {
    fail("cannot write the ready file");
  }
  sleep_until_killed();
}

pid_t g_leader = 0;
bool g_leader_spins = false;

[[noreturn]] void spin_forever() {
  constexpr long long kCycles = 100000000;  // ~50 ms per launch at ~2 GHz
  while (true) {
    spin<<<1024, 256>>>(kCycles);
    if (cudaDeviceSynchronize() != cudaSuccess) fail("the spinning kernel failed");
  }
}

void* zombie_leader_worker(void*) {
  // Report only once the kernel shows the leader as a zombie: that is the shape under test
  // (ps: Zl, empty /proc/PID/fd), not the moment just before it.
  while (proc_state(g_leader) != 'Z') usleep(10 * 1000);
  if (!write_ready(std::to_string(g_leader))) fail("cannot write the ready file");
  if (g_leader_spins) spin_forever();
  sleep_until_killed();
}

// Problem 2: the leader thread exits, a worker thread keeps the context. The files then show
// only in /proc/PID/task/TID/fd, which fuser and lsof do not read. SPINS: the worker thread
// then runs kernels without end (issue 47: its owner is gone, whatever it computes).
[[noreturn]] void zombie_leader(unsigned long mib, bool spins = false) {
  allocate(mib);
  g_leader = getpid();
  g_leader_spins = spins;
  pthread_t worker;
  const int error = pthread_create(&worker, nullptr, zombie_leader_worker, nullptr);
  if (error != 0) fail(std::string("pthread_create: ") + std::strerror(error));
  // The lifetime alarm armed in main() stays: ITIMER_REAL belongs to the process, not the thread.
  pthread_exit(nullptr);
}

// Problem 7: a CUDA process that exited but is never reaped holds no GPU memory.
[[noreturn]] void zombie() {
  // The parent never touches CUDA: only the child may be the subject of the test.
  const pid_t parent = getpid();
  const pid_t child = fork_or_fail();
  if (child == 0) {
    allocate(64);
    _exit(0);
  }
  // WNOWAIT: learn that (and how) the child ended while leaving it unreaped.
  siginfo_t info{};
  int rc = 0;
  do {
    rc = waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) fail(std::string("waitid: ") + std::strerror(errno));
  if (info.si_code != CLD_EXITED || info.si_status != 0) {
    fail("the CUDA child did not exit cleanly (it failed to allocate?)");
  }
  if (!write_ready(std::to_string(child) + " " + std::to_string(parent))) {
    fail("cannot write the ready file");
  }
  sleep_until_killed();
}

// docs/facts.md: when the exporter of a CUDA IPC handle dies, the importer's PID carries the whole
// allocation.
[[noreturn]] void ipc(unsigned long mib) {
  int handle_pipe[2];
  if (pipe(handle_pipe) != 0) fail(std::string("pipe: ") + std::strerror(errno));
  const pid_t exporter = getpid();
  // Fork before any CUDA call: a CUDA context does not survive fork, the importer needs its own.
  const pid_t importer = fork_or_fail();
  if (importer == 0) {
    close(handle_pipe[1]);
    cudaIpcMemHandle_t handle;
    if (!read_all(handle_pipe[0], &handle, sizeof(handle))) fail("no IPC handle from the exporter");
    cuda_check(cudaSetDevice(0), "cudaSetDevice(0)");
    void* p = nullptr;
    cuda_check(cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess),
               "cudaIpcOpenMemHandle");
    if (!write_ready(std::to_string(exporter) + " " + std::to_string(getpid()))) {
      fail("cannot write the ready file");
    }
    sleep_until_killed();
  }
  close(handle_pipe[0]);
  void* p = allocate(mib);
  cudaIpcMemHandle_t handle;
  cuda_check(cudaIpcGetMemHandle(&handle, p), "cudaIpcGetMemHandle");
  if (!write_all(handle_pipe[1], &handle, sizeof(handle))) fail("cannot pass the IPC handle");
  close(handle_pipe[1]);
  sleep_until_killed();
}

// Problem 4: an inference server's workers, each with its own context (forked before any CUDA
// call, like multiprocessing's spawn). run.sh SIGKILLs the parent to orphan them. WITH_CONTEXT:
// the parent makes a context of its own after its workers have their memory (it holds the GPU
// too: the root of their tree).
[[noreturn]] void server(unsigned long workers, unsigned long mib, bool with_context = false) {
  int done_pipe[2];
  if (pipe(done_pipe) != 0) fail(std::string("pipe: ") + std::strerror(errno));
  std::vector<pid_t> pids;
  for (unsigned long i = 0; i < workers; ++i) {
    const pid_t pid = fork_or_fail();
    if (pid == 0) {
      close(done_pipe[0]);
      allocate(mib);  // on failure this writes "error: ..." to READY itself
      const char ok = 'k';
      if (!write_all(done_pipe[1], &ok, 1)) fail("cannot tell the parent");
      sleep_until_killed();
    }
    pids.push_back(pid);
  }
  close(done_pipe[1]);
  // One byte per worker that has its memory. A worker that failed wrote the error to READY;
  // the others keep the pipe open, so this read then waits for the lifetime alarm.
  for (unsigned long i = 0; i < workers; ++i) {
    char ok = 0;
    if (!read_all(done_pipe[0], &ok, 1)) fail("a worker died before allocating");
  }
  if (with_context) allocate(0);
  std::string line = std::to_string(getpid());
  for (pid_t pid : pids) line += " " + std::to_string(pid);
  if (!write_ready(line)) fail("cannot write the ready file");
  sleep_until_killed();
}

bool parse_number(const char* text, unsigned long max, unsigned long* out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long value = std::strtoul(text, &end, 10);
  if (errno != 0 || *end != '\0' || text[0] == '-' || value > max) return false;
  *out = value;
  return true;
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: scenarios leftover MIB READY | busy MIB READY | heir MIB READY |\n"
               "                 unmapped-heir MIB READY |\n"
               "                 zombie-leader MIB READY | busy-zombie-leader MIB READY |\n"
               "                 zombie READY | ipc MIB READY | server N MIB READY |\n"
               "                 ctx-server N MIB READY\n"
               "Lifetime of every process: $GPUCLEAN_SCENARIO_LIFETIME seconds (default 120).\n");
  _exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) usage();
  const std::string mode = argv[1];
  const int want_argc = mode == "zombie" ? 3 : mode == "server" || mode == "ctx-server" ? 5 : 4;
  if (argc != want_argc) usage();
  if (const char* lifetime = std::getenv("GPUCLEAN_SCENARIO_LIFETIME")) {
    unsigned long seconds = 0;
    if (!parse_number(lifetime, 3600, &seconds) || seconds == 0) usage();
    g_lifetime_s = static_cast<unsigned>(seconds);
  }
  // An ignored SIGALRM survives exec: if the caller ignores it, the lifetime would never end.
  signal(SIGALRM, SIG_DFL);
  arm_lifetime();
  // The ready file is the last argument of every mode.
  g_ready_path = argv[argc - 1];
  note_self();

  const unsigned long max_mib = 1UL << 20;  // 1 TiB: far beyond any GPU, catches typos
  unsigned long mib = 0;
  if (mode == "zombie") zombie();
  if (mode == "server" || mode == "ctx-server") {
    unsigned long workers = 0;
    if (!parse_number(argv[2], 64, &workers) || workers == 0 ||
        !parse_number(argv[3], max_mib, &mib)) {
      usage();
    }
    server(workers, mib, mode == "ctx-server");
  }
  if (!parse_number(argv[2], max_mib, &mib)) usage();
  if (mode == "leftover") leftover(mib);
  if (mode == "busy") busy(mib);
  if (mode == "heir") heir(mib);
  if (mode == "unmapped-heir") unmapped_heir(mib);
  if (mode == "zombie-leader") zombie_leader(mib);
  if (mode == "busy-zombie-leader") zombie_leader(mib, true);
  if (mode == "ipc") ipc(mib);
  usage();
}
