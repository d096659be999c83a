// A process that holds a file the way GPU programs hold /dev/nvidia*, in one of several shapes.
// Integration tests start it; it reports the PIDs to look for in READY_FILE (written atomically)
// and ends itself after kLifetimeSeconds in any case, so a crashed test leaves nothing behind.
//
//   holder_helper MODE FILE READY_FILE [ignored args…]
//   hold      open FILE and wait
//   heir      open FILE, fork; the parent exits; the child (re-parented) keeps the file
//   zombie-leader  open FILE; main thread pthread_exit()s while a second thread keeps running
//   zombie    a child opens FILE and exits on SIGUSR1; the parent never reaps it
//   daemon    double fork + setsid; the grandchild holds FILE
//   map       mmap FILE, close the descriptor, wait (held through maps only)
//   map-crowd CROWD_FILE COUNT   like map, then COUNT mappings of CROWD_FILE listed before it
//   tree N    open FILE, fork N workers (they inherit it); all ignore SIGTERM; reports
//             "PARENT W1 … WN"; the parent reaps its workers
//   setsid-child  a child calls setsid() and opens FILE; the parent holds nothing and reaps;
//             reports "PARENT CHILD"
//   stopped   open FILE, report, raise(SIGSTOP); a watchdog child (PR_SET_PDEATHSIG) kills it
//             after the lifetime, since a stopped process never sees its own alarm; reports
//             "STOPPED WATCHDOG"
//   fork-on-term  lead its own process group, open FILE; on SIGTERM fork a child that ignores
//             SIGTERM and keeps FILE (it reports its PID in READY_FILE.child), then exit — a
//             server whose shutdown handler starts a helper after gpuclean made its plan
//   orphan-tree N  a server whose launcher is gone (double fork + setsid) opens FILE and forks N
//             workers that hold it and one helper that closes it (a tokenizer, say); reports
//             "SERVER W1 … WN HELPER"; the server reaps them. A killed inference server's shape
//             with its launcher gone: the tree `kill --leftovers` must end whole (issue 47)
//   orphan-fork-on-term  a leftover whose shutdown handler starts a helper that escapes: double
//             fork + setsid, open FILE; on SIGTERM fork a child that calls setsid() (a session
//             and group of its own), ignores SIGTERM and keeps FILE (its PID in
//             READY_FILE.child), then exit at once. Only the kernel's fork events tie the child
//             to its parent afterwards (issue 47)
//   chain N   open FILE; this process and N-1 more, each forked by the one before (a chain of
//             N, the last at depth N-1), all holding FILE; each dies with its parent
//             (PR_SET_PDEATHSIG(SIGKILL)), so killing the first ends the chain; reports
//             "FIRST LAST"
//   vfork     open FILE, vfork(); the child closes its copy of FILE, reports "PARENT CHILD" and
//             sleeps for the lifetime before _exit: the parent waits in the kernel (state D,
//             wait channel kernel_clone) all along, as Python's subprocess and posix_spawn's
//             parents do for a moment (issue 32)
// READY_FILE gets the PIDs as seen in the host /proc (readlink /proc/self), space separated.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "helper_process.h"

namespace {

using namespace gpuclean::testing::helper;  // NOLINT(google-build-using-namespace): one program

std::string self_pid() {
  // /proc/self resolves in the namespace of the proc mount, so inside `unshare --pid` with the
  // host's /proc this is the host PID the test can see.
  char buf[32] = {};
  const ssize_t n = ::readlink("/proc/self", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::to_string(::getpid());
}

// Like wait_forever, but reaps children as they exit (a parent that does its job).
[[noreturn]] void reap_forever() {
  ::alarm(kLifetimeSeconds);
  for (;;) {
    if (::waitpid(-1, nullptr, 0) < 0 && errno == ECHILD) ::pause();
  }
}

void write_pid(int fd) {
  const std::string pid = self_pid() + " ";
  if (::write(fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size())) _exit(3);
}

int g_watched_pidfd = -1;

void on_watchdog_alarm(int) {
  ::syscall(SYS_pidfd_send_signal, g_watched_pidfd, SIGKILL, nullptr, 0);
  _exit(0);
}

const char* g_ready = nullptr;

void* zombie_leader_worker(void* arg) {
  const auto leader = static_cast<pid_t>(reinterpret_cast<std::intptr_t>(arg));
  // Report only once the leader really is a zombie, so the test sees the "Zl" shape.
  const std::string stat = "/proc/" + std::to_string(leader) + "/stat";
  for (int i = 0; i < 5000; ++i) {
    char buf[512] = {};
    FILE* f = std::fopen(stat.c_str(), "r");
    if (f != nullptr) {
      const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
      std::fclose(f);
      const char* close = std::strrchr(buf, ')');
      if (n > 0 && close != nullptr && close[1] == ' ' && close[2] == 'Z') break;
    }
    ::usleep(1000);
  }
  report(g_ready, std::to_string(leader));
  wait_forever();
}

void on_usr1(int) {
  _exit(0);
}

// fork-on-term's handler: only async-signal-safe calls until the child's own code.
bool g_child_escapes = false;
void on_term_fork(int) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (g_child_escapes) ::setsid();
    ::signal(SIGTERM, SIG_IGN);
    ::alarm(kLifetimeSeconds);
    report((std::string(g_ready) + ".child").c_str(), self_pid());
    wait_forever();
  }
  _exit(0);
}

// chain mode. Each link forks the next and waits; the fork's child goes round the loop as the
// next link, so the chain's length costs no stack. The last link reports through a pipe every
// link inherited.
[[noreturn]] void run_chain(const char* file, int links) {
  open_or_die(file);  // O_CLOEXEC, but fork keeps it: every link holds it
  int pid_pipe[2];
  if (::pipe(pid_pipe) != 0) _exit(3);
  const pid_t first = ::getpid();
  for (int i = 1; i < links; ++i) {
    const pid_t parent = ::getpid();
    const pid_t child = ::fork();
    if (child < 0) _exit(3);  // the links forked so far end with their own alarms
    if (child > 0) break;
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) _exit(0);
    ::alarm(kLifetimeSeconds);
    if (i == links - 1) write_pid(pid_pipe[1]);
  }
  if (::getpid() != first) wait_forever();
  ::close(pid_pipe[1]);
  const std::string last = links > 1 ? read_pid(pid_pipe[0]) : self_pid();
  report(g_ready, self_pid() + " " + last);
  wait_forever();
}

// Double fork + setsid: true in the grandchild, whose launcher is gone (re-parented to init, a
// session and group of its own, its lifetime armed); false in this process once the first
// child has exited, for it to return 0. Exits 3 when a fork fails.
bool become_orphan() {
  const pid_t first = ::fork();
  if (first < 0) ::exit(3);
  if (first == 0) {
    ::setsid();
    if (::fork() != 0) _exit(0);
    ::alarm(kLifetimeSeconds);
    return true;
  }
  ::waitpid(first, nullptr, 0);
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: holder_helper MODE FILE READY_FILE\n");
    return 2;
  }
  const std::string mode = argv[1];
  const char* file = argv[2];
  g_ready = argv[3];
  ::alarm(kLifetimeSeconds);

  if (mode == "hold") {
    open_or_die(file);
    report(g_ready, self_pid());
    wait_forever();
  }
  if (mode == "fork-on-term") {
    if (::setpgid(0, 0) != 0) return 3;
    open_or_die(file);
    if (::signal(SIGTERM, on_term_fork) == SIG_ERR) return 3;
    report(g_ready, self_pid());
    wait_forever();
  }
  if (mode == "heir") {
    open_or_die(file);
    const pid_t parent = ::getpid();  // before fork: the parent may be gone before the child runs
    const pid_t child = ::fork();
    if (child < 0) return 3;
    if (child == 0) {
      ::alarm(kLifetimeSeconds);  // alarms are not inherited across fork
      // Wait until the parent is gone, as after "fork after CUDA init, parent exits".
      while (::getppid() == parent) ::usleep(1000);
      report(g_ready, self_pid());
      wait_forever();
    }
    return 0;
  }
  if (mode == "zombie-leader") {
    open_or_die(file);
    pthread_t thread;
    const auto pid = static_cast<std::intptr_t>(std::stol(self_pid()));
    if (::pthread_create(&thread, nullptr, zombie_leader_worker, reinterpret_cast<void*>(pid)) !=
        0) {
      return 3;
    }
    ::pthread_exit(nullptr);
  }
  if (mode == "zombie") {
    int ready_pipe[2];
    if (::pipe(ready_pipe) != 0) return 3;
    const pid_t child = ::fork();
    if (child < 0) return 3;
    if (child == 0) {
      ::alarm(kLifetimeSeconds);
      ::signal(SIGUSR1, on_usr1);
      open_or_die(file);
      const std::string pid = self_pid();
      if (::write(ready_pipe[1], pid.data(), pid.size()) < 0) _exit(3);
      wait_forever();
    }
    ::close(ready_pipe[1]);
    char buf[32] = {};
    if (::read(ready_pipe[0], buf, sizeof(buf) - 1) <= 0) return 3;
    report(g_ready, std::string(buf) + " " + self_pid());  // child, then the non-reaping parent
    wait_forever();  // never calls wait(): the child stays a zombie after it exits
  }
  if (mode == "daemon") {
    if (!become_orphan()) return 0;
    open_or_die(file);
    report(g_ready, self_pid());
    wait_forever();
  }
  if (mode == "map") {
    const int fd = open_or_die(file);
    if (::ftruncate(fd, 4096) != 0) return 3;
    void* map = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return 3;
    ::close(fd);
    report(g_ready, self_pid());
    wait_forever();
  }
  if (mode == "map-crowd") {
    // The device's mapping first (the highest address: mmap hands out addresses downwards, so
    // maps lists it after the crowd), then COUNT one-page mappings of CROWD_FILE at offsets 0
    // and 2 pages in turn (neighbours whose file offsets run on would merge into one line: a
    // gap in the file keeps them apart): a maps file past
    // the size any whole-file read would take (issue 32: 24,000 mappings of a 3,000-character
    // path make 71 MiB).
    if (argc < 6) return 2;
    const int fd = open_or_die(file);
    if (::ftruncate(fd, 4096) != 0) return 3;
    if (::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) return 3;
    ::close(fd);
    const int crowd = open_or_die(argv[4]);
    if (::ftruncate(crowd, 3 * 4096) != 0) return 3;
    const long count = std::strtol(argv[5], nullptr, 10);
    for (long i = 0; i < count; ++i) {
      if (::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, crowd, (i % 2) * 2 * 4096) == MAP_FAILED) {
        return 3;
      }
    }
    ::close(crowd);
    report(g_ready, self_pid());
    wait_forever();
  }
  if (mode == "tree") {
    const int workers = argc > 4 ? std::atoi(argv[4]) : 0;
    if (workers < 1) return 2;
    if (::signal(SIGTERM, SIG_IGN) == SIG_ERR) return 3;
    open_or_die(file);  // O_CLOEXEC, but fork keeps it: the workers hold it too
    int pid_pipe[2];
    if (::pipe(pid_pipe) != 0) return 3;
    std::string pids = self_pid();
    for (int i = 0; i < workers; ++i) {
      const pid_t worker = ::fork();
      if (worker < 0) return 3;  // the workers forked so far end with their own alarms
      if (worker == 0) {
        ::alarm(kLifetimeSeconds);
        if (::signal(SIGTERM, SIG_IGN) == SIG_ERR) _exit(3);
        ::close(pid_pipe[0]);
        write_pid(pid_pipe[1]);
        ::close(pid_pipe[1]);
        wait_forever();
      }
      pids += " " + read_pid(pid_pipe[0]);  // one at a time: reported in fork order
    }
    ::close(pid_pipe[0]);
    ::close(pid_pipe[1]);
    report(g_ready, pids);
    reap_forever();
  }
  if (mode == "orphan-fork-on-term") {
    if (!become_orphan()) return 0;
    open_or_die(file);
    g_child_escapes = true;
    if (::signal(SIGTERM, on_term_fork) == SIG_ERR) _exit(3);
    report(g_ready, self_pid());
    wait_forever();
  }
  if (mode == "orphan-tree") {
    const int workers = argc > 4 ? std::atoi(argv[4]) : 0;
    if (workers < 1) return 2;
    if (!become_orphan()) return 0;
    const int fd = open_or_die(file);  // O_CLOEXEC, but fork keeps it
    int pid_pipe[2];
    if (::pipe(pid_pipe) != 0) _exit(3);
    std::string pids = self_pid();
    for (int i = 0; i <= workers; ++i) {
      const pid_t child = ::fork();
      if (child < 0) _exit(3);  // the children forked so far end with their own alarms
      if (child == 0) {
        ::alarm(kLifetimeSeconds);
        if (i == workers) ::close(fd);  // the helper holds nothing
        ::close(pid_pipe[0]);
        write_pid(pid_pipe[1]);
        ::close(pid_pipe[1]);
        wait_forever();
      }
      pids += " " + read_pid(pid_pipe[0]);
    }
    ::close(pid_pipe[0]);
    ::close(pid_pipe[1]);
    report(g_ready, pids);
    reap_forever();
  }
  if (mode == "chain") {
    const int links = argc > 4 ? std::atoi(argv[4]) : 0;
    if (links < 1) return 2;
    run_chain(file, links);
  }
  if (mode == "setsid-child") {
    int pid_pipe[2];
    if (::pipe(pid_pipe) != 0) return 3;
    const pid_t child = ::fork();
    if (child < 0) return 3;
    if (child == 0) {
      ::alarm(kLifetimeSeconds);
      ::close(pid_pipe[0]);
      if (::setsid() < 0) _exit(3);
      open_or_die(file);
      write_pid(pid_pipe[1]);
      ::close(pid_pipe[1]);
      wait_forever();
    }
    ::close(pid_pipe[1]);
    const std::string child_pid = read_pid(pid_pipe[0]);
    ::close(pid_pipe[0]);
    report(g_ready, self_pid() + " " + child_pid);
    reap_forever();
  }
  if (mode == "vfork") {
    const int fd = open_or_die(file);
    // The child runs on the parent's memory while the parent waits: it only makes system calls
    // on what is prepared here (no allocation, no stdio).
    const std::string tmp = std::string(g_ready) + ".tmp-vfork";
    char line[96] = {};
    const int prefix = std::snprintf(line, sizeof(line), "%s ", self_pid().c_str());
    if (prefix <= 0) return 3;
    const auto used = static_cast<std::size_t>(prefix);
    const pid_t child = ::vfork();
    if (child == 0) {
      ::close(fd);
      const ssize_t n = ::readlink("/proc/self", line + used, sizeof(line) - used - 2);
      if (n <= 0) _exit(3);
      const std::size_t size = used + static_cast<std::size_t>(n);
      line[size] = '\n';
      const int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (out < 0 || ::write(out, line, size + 1) != static_cast<ssize_t>(size + 1)) _exit(3);
      if (::close(out) != 0 || ::rename(tmp.c_str(), g_ready) != 0) _exit(3);
      timespec left{static_cast<time_t>(kLifetimeSeconds), 0};
      while (::nanosleep(&left, &left) != 0 && errno == EINTR) {
      }
      _exit(0);
    }
    if (child < 0) return 3;
    wait_forever();
  }
  if (mode == "stopped") {
    int pid_pipe[2];
    if (::pipe(pid_pipe) != 0) return 3;
    const pid_t parent = ::getpid();
    const pid_t watchdog = ::fork();
    if (watchdog < 0) return 3;
    if (watchdog == 0) {
      ::close(pid_pipe[0]);
      // Dies with the stopped process; kills it if it is still there after the lifetime.
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) _exit(0);
      g_watched_pidfd = static_cast<int>(::syscall(SYS_pidfd_open, parent, 0));
      if (::signal(SIGALRM, on_watchdog_alarm) == SIG_ERR) _exit(3);
      ::alarm(kLifetimeSeconds);
      write_pid(pid_pipe[1]);
      ::close(pid_pipe[1]);
      for (;;) ::pause();
    }
    ::close(pid_pipe[1]);
    const std::string watchdog_pid = read_pid(pid_pipe[0]);
    ::close(pid_pipe[0]);
    open_or_die(file);  // after the fork: the watchdog holds nothing
    report(g_ready, self_pid() + " " + watchdog_pid);
    if (::raise(SIGSTOP) != 0) return 3;
    wait_forever();
  }
  std::fprintf(stderr, "holder_helper: unknown mode %s\n", mode.c_str());
  return 2;
}
