#include "ops/launch.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdint>
#include <cstring>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, not in a header

namespace gpuclean::ops {
namespace {

// What the child reports through the exec pipe when a step fails.
struct ChildFailure {
  int step = 0;  // index into kSteps
  int errnum = 0;
};
constexpr std::array<const char*, 5> kSteps = {"join the cgroup", "start a session",
                                               "set the parent-death signal", "exec",
                                               "redirect its output"};

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

[[noreturn]] void fail_in_child(int pipe_fd, int step) {
  const ChildFailure failure{step, errno};
  // Async-signal-safe only from here on: the parent reads the failure and reaps us.
  [[maybe_unused]] const ssize_t ignored = ::write(pipe_fd, &failure, sizeof(failure));
  ::_exit(127);
}

[[noreturn]] void run_child(const std::string& program, char* const* argv,
                            const LaunchOptions& options, bool born_in_cgroup, int pipe_fd,
                            pid_t parent) {
  // gpuclean blocks the signals it forwards (signalfd); the workload must start with none
  // blocked and default dispositions, as if a shell had started it.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int signo : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGPIPE}) {
    (void)::signal(signo, SIG_DFL);
  }

  if (!born_in_cgroup && options.cgroup_procs_fd >= 0 &&
      ::write(options.cgroup_procs_fd, "0", 1) != 1) {
    fail_in_child(pipe_fd, 0);
  }
  if (options.new_session && ::setsid() < 0) fail_in_child(pipe_fd, 1);
  if (options.parent_death_signal) {
    if (::prctl(PR_SET_PDEATHSIG, *options.parent_death_signal) != 0) fail_in_child(pipe_fd, 2);
    // The parent may have died before the prctl: then nobody would ever send the signal.
    if (::getppid() != parent) ::_exit(128 + *options.parent_death_signal);
  }
  if (options.output_fd >= 0) {
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || ::dup2(null_fd, STDIN_FILENO) < 0 ||
        ::dup2(options.output_fd, STDOUT_FILENO) < 0 ||
        ::dup2(options.error_fd >= 0 ? options.error_fd : options.output_fd, STDERR_FILENO) < 0) {
      fail_in_child(pipe_fd, 4);
    }
  }
  ::execve(program.c_str(), argv, environ);
  fail_in_child(pipe_fd, 3);
}

// clone3 with CLONE_PIDFD, and CLONE_INTO_CGROUP when a group is given: the child is born in
// its group. Moving it afterwards (a cgroup.procs write) took 8 ms here per start: a
// migration takes the cgroup threadgroup lock for writing, which waits for an RCU grace
// period (bench/run_bench.sh). Returns -1 with errno ENOSYS (or E2BIG/EINVAL) on kernels
// without it: the caller falls back to fork(). Only async-signal-safe calls follow in the
// child, as after vfork: glibc's fork handlers do not run for a raw clone3.
pid_t clone_into(int cgroup_dir_fd, int* pidfd) {
  clone_args args{};
  args.flags = CLONE_PIDFD;
  args.pidfd = static_cast<decltype(args.pidfd)>(reinterpret_cast<std::uintptr_t>(pidfd));
  args.exit_signal = SIGCHLD;
  if (cgroup_dir_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<decltype(args.cgroup)>(cgroup_dir_fd);
  }
  return static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof(args)));
}

}  // namespace

Result<std::string> resolve_program(const std::string& name, const std::string& search_path) {
  if (name.empty()) return Error{ENOENT, "empty program name"};
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), F_OK) != 0) return errno_error(name);
    if (!is_executable_file(name)) return Error{EACCES, name};
    return name;
  }
  bool found_unusable = false;
  std::size_t pos = 0;
  while (pos <= search_path.size()) {
    const std::size_t colon = search_path.find(':', pos);
    const std::size_t end = colon == std::string::npos ? search_path.size() : colon;
    const std::string dir = search_path.substr(pos, end - pos);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
    if (::access(candidate.c_str(), F_OK) == 0) found_unusable = true;
    pos = end + 1;
  }
  return Error{found_unusable ? EACCES : ENOENT, name};
}

Result<Launched> launch(const std::string& program, const std::vector<std::string>& argv,
                        const LaunchOptions& options) {
  std::vector<char*> c_argv;
  c_argv.reserve(argv.size() + 1);
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);

  std::array<int, 2> pipe_fds{};
  if (::pipe2(pipe_fds.data(), O_CLOEXEC) != 0) return errno_error("pipe2");
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);

  const pid_t parent = ::getpid();
  int raw_pidfd = -1;
  bool cloned = true;
  pid_t pid = clone_into(options.cgroup_dir_fd, &raw_pidfd);
  if (pid < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL)) {
    cloned = false;
    pid = ::fork();
  }
  if (pid < 0) return errno_error(cloned ? "clone3" : "fork");
  if (pid == 0) {
    run_child(program, c_argv.data(), options, cloned && options.cgroup_dir_fd >= 0,
              write_end.get(), parent);
  }

  write_end.reset();
  // After fork: the child is ours and unreaped, so its PID cannot be reused before this.
  if (!cloned) raw_pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  const int pidfd_errno = errno;
  UniqueFd pidfd(raw_pidfd);

  ChildFailure failure;
  ssize_t got = 0;
  do {
    got = ::read(read_end.get(), &failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof(failure))) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    const auto step = static_cast<std::size_t>(failure.step);
    return Error{failure.errnum, std::string(step < kSteps.size() ? kSteps[step] : "start")};
  }
  // EOF: the exec succeeded (the pipe closed on exec).
  if (!pidfd) {
    // Without a pidfd the PID could be recycled under us: refuse to supervise it blind.
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return Error{pidfd_errno, "pidfd_open (Linux >= 5.3 is needed)"};
  }
  return Launched{pid, std::move(pidfd)};
}

}  // namespace gpuclean::ops
