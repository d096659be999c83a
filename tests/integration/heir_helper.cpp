// Process shapes for the heir-evidence tests: a launcher that leads a process group or a
// session (or holds the file) and exits, leaving holders behind that its PID is, or is not,
// tied to. The launcher plays the dead CUDA owner NVML still names; the test reaps it so its
// PID is gone from /proc. Every process here ends itself after kLifetimeSeconds.
//
//   heir_helper MODE FILE READY_FILE [N]
//   group     the launcher leads a new process group; its child M forks H, which opens FILE.
//             The launcher exits; H (parent M alive, not an orphan) is in the dead PID's group.
//             Reports "H M".
//   session   the launcher leads a new session; its child M makes its own group there and
//             forks H, which opens FILE. The launcher exits; H's session ID is the dead PID,
//             its group is M's. Reports "H M".
//   orphans N the launcher opens FILE and forks N children (they inherit it), then exits: N
//             orphans with the same inherited file. Reports "C1 … CN" (fork order).
// READY_FILE gets the PIDs space separated, written atomically, before the launcher exits.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "helper_process.h"

namespace {

using namespace gpuclean::testing::helper;  // NOLINT(google-build-using-namespace): one program

void write_text(int fd, const std::string& text) {
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) _exit(3);
}

// M forks H; H opens the file and sends "H M " through the pipe; M stays (H's live parent).
[[noreturn]] void middle_and_holder(const char* file, int pipe_out) {
  const pid_t holder = ::fork();
  if (holder < 0) _exit(3);
  if (holder == 0) {
    (void)open_or_die(file);
    write_text(pipe_out, std::to_string(::getpid()) + " " + std::to_string(::getppid()) + " ");
    wait_forever();
  }
  wait_forever();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    (void)std::fprintf(stderr, "usage: heir_helper group|session|orphans FILE READY_FILE [N]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const char* file = argv[2];
  const char* ready = argv[3];
  ::alarm(kLifetimeSeconds);
  int fds[2];
  if (::pipe(fds) != 0) return 3;

  if (mode == "group" || mode == "session") {
    if (mode == "group" ? ::setpgid(0, 0) != 0 : ::setsid() < 0) return 3;
    const pid_t middle = ::fork();
    if (middle < 0) return 3;
    if (middle == 0) {
      // In the session case M leaves the launcher's group, so only the session ties H to it.
      if (mode == "session" && ::setpgid(0, 0) != 0) _exit(3);
      middle_and_holder(file, fds[1]);
    }
    const std::string holder = read_pid(fds[0]);
    report(ready, holder + " " + read_pid(fds[0]));
    return 0;  // the launcher dies: the owner NVML would still name
  }
  if (mode == "orphans") {
    const int n = argc > 4 ? std::atoi(argv[4]) : 2;
    (void)open_or_die(file);
    std::string pids;
    for (int i = 0; i < n; ++i) {
      const pid_t child = ::fork();
      if (child < 0) return 3;  // the children forked so far end with their own alarms
      if (child == 0) {
        write_text(fds[1], std::to_string(::getpid()) + " ");
        wait_forever();
      }
      pids += (i > 0 ? " " : "") + read_pid(fds[0]);
    }
    report(ready, pids);
    return 0;
  }
  (void)std::fprintf(stderr, "heir_helper: unknown mode %s\n", mode.c_str());
  return 2;
}
