#include "top/child_run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>

#include "core/exit_code.h"

namespace gpuclean::top {

std::optional<ChildRun> start_child(const std::string& program,
                                    const std::vector<std::string>& argv, bool acting,
                                    std::string& error) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    error = "pipe2 failed";
    return std::nullopt;
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  ops::LaunchOptions options;
  options.output_fd = write_end.get();
  options.new_session = true;
  if (!acting) options.parent_death_signal = SIGKILL;
  auto launched = ops::launch(program, argv, options);
  if (!launched.ok()) {
    error = "cannot run gpuclean kill: " + launched.error().message();
    return std::nullopt;
  }
  (void)::fcntl(read_end.get(), F_SETFL, O_NONBLOCK);
  ChildRun run{std::move(launched).value(), std::move(read_end), {}, std::nullopt};
  return run;
}

void pump_child(ChildRun& run) {
  char buffer[4096];
  ssize_t got = 0;
  while ((got = ::read(run.output.get(), buffer, sizeof(buffer))) > 0) {
    run.text.append(buffer, static_cast<std::size_t>(got));
  }
  pollfd exited{run.launched.pidfd.get(), POLLIN, 0};
  if (run.exit_code || ::poll(&exited, 1, 0) <= 0) return;
  int status = 0;
  if (::waitpid(run.launched.pid, &status, 0) == run.launched.pid) {
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else {
    run.exit_code = kExitRuntime;
  }
  while ((got = ::read(run.output.get(), buffer, sizeof(buffer))) > 0) {
    run.text.append(buffer, static_cast<std::size_t>(got));
  }
}

void end_child(ChildRun& run) {
  if (run.exit_code) return;
  (void)::syscall(SYS_pidfd_send_signal, run.launched.pidfd.get(), SIGKILL, nullptr, 0);
  ::waitpid(run.launched.pid, nullptr, 0);
}

}  // namespace gpuclean::top
