// A process whose mmap lock stays held, so that reading its /proc/PID/cmdline or environ blocks
// in the kernel (proc_pid_cmdline_read -> access_remote_vm -> mmap_read_lock), while
// /proc/PID/stat, status and fd still answer. (On 6.18, maps answers too — it walks the VMAs
// under RCU — but smaps_rollup blocks.) tests/fuse/fuse_fixture.h starts both roles.
//
//   mm_lock_victim serve MOUNTPOINT RELEASE_FILE
//     A FUSE file system (foreground, multi-threaded) with one file, /blob (1 MiB). Its reads
//     block until RELEASE_FILE exists, then answer zeros. Everything else answers at once, so
//     stat and open of /blob work while reads hang. Unmounts itself on SIGTERM, when its parent
//     dies (PR_SET_PDEATHSIG) or after kDaemonLifetimeSeconds.
//
//   mm_lock_victim victim FUSEFILE HELDFILE [READY_FILE [MARKER…]]
//     Holds HELDFILE open (the test's fake GPU device) for life, and maps FUSEFILE. Then:
//       faulter     touches the mapped page: the fault waits on the FUSE daemon;
//       mem-reader  preads /proc/self/mem at that address: access_remote_vm faults the page in
//                   with the mmap lock held for read and no way to drop it (no FAULT_FLAG_
//                   ALLOW_RETRY), so the lock stays held while the daemon does not answer;
//       mmapper     calls mmap: it queues for the lock in write mode, and readers that come
//                   after a queued writer wait too — every reader of /proc/PID/cmdline.
//     Once a read of its own /proc/self/cmdline does not return within kProbeMillis, it prints
//     "PID ready" to stdout and writes "PID" to READY_FILE (atomically), then waits forever.
//     Extra arguments are ignored: they only mark the command line. Dies with its parent
//     (PR_SET_PDEATHSIG) and after kLifetimeSeconds in any case.
//
// The faulter alone is not enough on kernels with per-VMA locks (6.4+): a user fault on a file
// mapping runs under the VMA lock, or drops the mmap lock while it waits for the page
// (VM_FAULT_RETRY). The /proc/self/mem read is the path that cannot let go.
#define FUSE_USE_VERSION 35
#include <fuse.h>
#include <fuse_lowlevel.h>  // fuse_session_exited

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "../integration/helper_process.h"

namespace {

using namespace gpuclean::testing::helper;  // NOLINT(google-build-using-namespace): one program

constexpr off_t kBlobSize = 1 << 20;
constexpr const char* kBlobPath = "/blob";
// Longer than the victim's lifetime, so a victim that outlives its test still gets its page.
constexpr unsigned kDaemonLifetimeSeconds = kLifetimeSeconds + 30;
constexpr auto kProbeMillis = std::chrono::milliseconds(200);
constexpr auto kHeldDeadline = std::chrono::seconds(20);

// ---- serve ------------------------------------------------------------------------------------

const char* g_release_file = nullptr;

int blob_getattr(const char* path, struct stat* st, fuse_file_info* /*fi*/) {
  std::memset(st, 0, sizeof(*st));
  if (std::strcmp(path, "/") == 0) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
    return 0;
  }
  if (std::strcmp(path, kBlobPath) == 0) {
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = kBlobSize;
    return 0;
  }
  return -ENOENT;
}

int blob_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t /*offset*/,
                 fuse_file_info* /*fi*/, fuse_readdir_flags /*flags*/) {
  if (std::strcmp(path, "/") != 0) return -ENOENT;
  fill(buf, ".", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  fill(buf, "..", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  fill(buf, kBlobPath + 1, nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  return 0;
}

int blob_open(const char* path, fuse_file_info* fi) {
  if (std::strcmp(path, kBlobPath) != 0) return -ENOENT;
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return -EACCES;
  fi->keep_cache = 0;  // every mount starts cold anyway; no page may come from elsewhere
  return 0;
}

// The point of the file system: a read waits until the test releases it (or the daemon is
// told to exit, so that a SIGTERM always gets the mount down).
int blob_read(const char* path, char* buf, size_t size, off_t offset, fuse_file_info* /*fi*/) {
  if (std::strcmp(path, kBlobPath) != 0) return -ENOENT;
  fuse_session* session = fuse_get_session(fuse_get_context()->fuse);
  while (::access(g_release_file, F_OK) != 0 && fuse_session_exited(session) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (offset >= kBlobSize) return 0;
  const auto n = static_cast<size_t>(std::min<off_t>(static_cast<off_t>(size), kBlobSize - offset));
  std::memset(buf, 0, n);
  return static_cast<int>(n);
}

void* blob_init(fuse_conn_info* /*conn*/, fuse_config* cfg) {
  cfg->kernel_cache = 0;
  return nullptr;
}

// fuse_main handles SIGTERM by leaving its loop and unmounting; the lifetime alarm and the
// parent-death signal end up there too.
void on_lifetime_alarm(int) {
  ::kill(::getpid(), SIGTERM);
}

int serve(const char* self, const char* mountpoint, const char* release_file) {
  g_release_file = release_file;
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::signal(SIGALRM, on_lifetime_alarm) == SIG_ERR) return 3;
  ::alarm(kDaemonLifetimeSeconds);

  fuse_operations ops{};
  ops.getattr = blob_getattr;
  ops.readdir = blob_readdir;
  ops.open = blob_open;
  ops.read = blob_read;
  ops.init = blob_init;
  // -f: stay in the foreground, so the PID the test started is the daemon it will reap.
  // Multi-threaded (no -s): blocked reads must not stop getattr and open from being answered.
  // fsname/subtype: recognisable in /proc/self/mountinfo. The thread limits: libfuse 3.14's
  // fuse_main otherwise warns about an invalid default ("max threads value 4294967295").
  const char* args[] = {
      self, "-f", "-o",
      "fsname=gpuclean-mm-lock,subtype=mm_lock_victim,max_threads=16,max_idle_threads=4",
      mountpoint};
  return fuse_main(5, const_cast<char**>(args), &ops, nullptr);
}

// ---- victim -----------------------------------------------------------------------------------

// Once the lock is held, any mmap, brk or munmap in this process waits until release: so does
// malloc when it needs more memory, and pthread_create (thread stacks are mmapped). Every thread
// is therefore created, and every string built, before the threads are let go.
volatile char* g_page = nullptr;
std::atomic<bool> g_go{false};    // lets the lock-taking threads start
std::atomic<bool> g_held{false};  // tells the mmapper to stop once it has been blocked
int g_mem_fd = -1;

// The cmdline probe: a persistent thread (none can be created later) that reads
// /proc/self/cmdline each time g_probe_requests moves past g_probe_answers.
std::atomic<unsigned> g_probe_requests{0};
std::atomic<unsigned> g_probe_answers{0};
// Thread IDs, for their /proc/self/task/TID/stat state.
std::atomic<pid_t> g_probe_tid{0};
std::atomic<pid_t> g_mmapper_tid{0};

void name_thread(const char* name) {
  ::prctl(PR_SET_NAME, name);
}

// The state letter of /proc/self/task/TID/stat, read without allocating; '?' when unreadable.
char thread_state(const char* stat_path) {
  char buf[512];
  const int fd = ::open(stat_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return '?';
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return '?';
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  return close != nullptr && close[1] == ' ' ? close[2] : '?';
}

void await_go() {
  g_go.wait(false);
}

void* faulter(void*) {
  name_thread("faulter");
  await_go();
  [[maybe_unused]] const char c = g_page[0];
  for (;;) ::pause();
}

void* mem_reader(void*) {
  name_thread("mem-reader");
  await_go();
  char c = 0;
  const auto address = static_cast<off_t>(reinterpret_cast<std::uintptr_t>(g_page));
  if (::pread(g_mem_fd, &c, 1, address) != 1) _exit(3);
  for (;;) ::pause();
}

// Maps and unmaps until a mmap waits behind the mem-reader's read lock; an mmap that came before
// the mem-reader took the lock simply succeeds, so one call is not enough.
void* mmapper(void*) {
  name_thread("mmapper");
  g_mmapper_tid.store(::gettid());
  await_go();
  while (!g_held.load()) {
    void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) _exit(3);
    ::munmap(p, 4096);
    ::sched_yield();
  }
  for (;;) ::pause();
}

void* cmdline_probe(void*) {
  name_thread("cmdline-probe");
  g_probe_tid.store(::gettid());
  for (unsigned answered = 0;; ++answered) {
    g_probe_requests.wait(answered);
    const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char buf[256];
      [[maybe_unused]] const ssize_t n = ::read(fd, buf, sizeof(buf));
      ::close(fd);
    }
    g_probe_answers.store(answered + 1);
  }
}

// True when a read of /proc/self/cmdline — what a tool scanning /proc does — asked for now has
// not finished after kProbeMillis, and both the probe and the mmapper sleep in the kernel ('D':
// the lock waits are killable) — not merely starved of CPU on a loaded machine. A blocked probe
// stays blocked until release (it dies with the process).
bool cmdline_blocks(const char* probe_stat, const char* mmapper_stat) {
  const unsigned request = g_probe_requests.fetch_add(1) + 1;
  g_probe_requests.notify_one();
  const auto end = std::chrono::steady_clock::now() + kProbeMillis;
  while (std::chrono::steady_clock::now() < end) {
    if (g_probe_answers.load() == request) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (g_probe_answers.load() == request) return false;
  return thread_state(probe_stat) == 'D' && thread_state(mmapper_stat) == 'D';
}

void wait_for_tid(const std::atomic<pid_t>& tid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (tid.load() == 0) {
    if (std::chrono::steady_clock::now() > deadline) _exit(3);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void start_thread(void* (*fn)(void*)) {
  pthread_t thread;
  if (::pthread_create(&thread, nullptr, fn, nullptr) != 0) _exit(3);
  ::pthread_detach(thread);
}

std::string self_pid() {
  // /proc/self resolves in the namespace of the proc mount: the PID the test sees.
  char buf[32] = {};
  const ssize_t n = ::readlink("/proc/self", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::to_string(::getpid());
}

bool write_all(int fd, const std::string& text) {
  return ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

// helper::report without stdio: fopen would malloc once the lock is held. Temp file + rename,
// so the test never reads half.
void report_without_malloc(const std::string& ready_file, const std::string& tmp,
                           const std::string& pid_line) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || !write_all(fd, pid_line) || ::close(fd) != 0) _exit(3);
  if (::rename(tmp.c_str(), ready_file.c_str()) != 0) _exit(3);
}

int victim(const char* fuse_file, const char* held_file, const char* ready_file) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::alarm(kLifetimeSeconds);
  open_or_die(held_file);  // kept for life, like a GPU program's /dev/nvidia0

  const int fd = ::open(fuse_file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::perror(fuse_file);
    return 3;
  }
  void* map = ::mmap(nullptr, static_cast<size_t>(kBlobSize), PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) {
    std::perror("mmap");
    return 3;
  }
  ::close(fd);  // the mapping keeps the file; no descriptor of ours points into the FUSE mount
  g_page = static_cast<volatile char*>(map);
  g_mem_fd = ::open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
  if (g_mem_fd < 0) {
    std::perror("/proc/self/mem");
    return 3;
  }

  const std::string pid = self_pid();
  const std::string stdout_line = pid + " ready\n";
  const std::string ready = ready_file != nullptr ? ready_file : "";
  const std::string ready_tmp = ready + ".tmp" + pid;
  const std::string pid_line = pid + "\n";
  const std::string failure = "mm_lock_victim: reading /proc/self/cmdline never blocked\n";

  start_thread(cmdline_probe);
  start_thread(faulter);
  start_thread(mem_reader);
  start_thread(mmapper);
  wait_for_tid(g_probe_tid);
  wait_for_tid(g_mmapper_tid);
  const std::string probe_stat = "/proc/self/task/" + std::to_string(g_probe_tid.load()) + "/stat";
  const std::string mmapper_stat =
      "/proc/self/task/" + std::to_string(g_mmapper_tid.load()) + "/stat";
  g_go.store(true);
  g_go.notify_all();

  const auto deadline = std::chrono::steady_clock::now() + kHeldDeadline;
  while (!cmdline_blocks(probe_stat.c_str(), mmapper_stat.c_str())) {
    if (std::chrono::steady_clock::now() > deadline) {
      write_all(STDERR_FILENO, failure);
      _exit(4);  // not exit(): no destructors or stdio with the other threads running
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  g_held.store(true);
  write_all(STDOUT_FILENO, stdout_line);
  if (!ready.empty()) report_without_malloc(ready, ready_tmp, pid_line);
  wait_forever();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string role = argc > 1 ? argv[1] : "";
  if (role == "serve" && argc == 4) return serve(argv[0], argv[2], argv[3]);
  if (role == "victim" && argc >= 4) return victim(argv[2], argv[3], argc > 4 ? argv[4] : nullptr);
  (void)std::fprintf(stderr,
                     "usage: mm_lock_victim serve MOUNTPOINT RELEASE_FILE\n"
                     "       mm_lock_victim victim FUSEFILE HELDFILE [READY_FILE [MARKER...]]\n");
  return 2;
}
