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

namespace {

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};

std::optional<Pipe> open_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  (void)::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void drain(int fd, std::string& into) {
  if (fd < 0) return;
  char buffer[4096];
  ssize_t got = 0;
  while ((got = ::read(fd, buffer, sizeof(buffer))) > 0) {
    into.append(buffer, static_cast<std::size_t>(got));
  }
}

}  // namespace

std::optional<ChildRun> start_child(const std::string& program,
                                    const std::vector<std::string>& argv, ChildMode mode,
                                    std::string& error) {
  std::optional<Pipe> output = open_pipe();
  std::optional<Pipe> errors = mode.split_errors ? open_pipe() : std::optional<Pipe>(Pipe{});
  if (!output || !errors) {
    error = "pipe2 failed";
    return std::nullopt;
  }
  ops::LaunchOptions options;
  options.output_fd = output->write_end.get();
  options.error_fd = errors->write_end.get();  // -1 when not split
  options.new_session = true;
  if (!mode.acting) options.parent_death_signal = SIGKILL;
  auto launched = ops::launch(program, argv, options);
  if (!launched.ok()) {
    error = "cannot run gpuclean kill: " + launched.error().message();
    return std::nullopt;
  }
  ChildRun run{std::move(launched).value(),
               std::move(output->read_end),
               std::move(errors->read_end),
               {},
               {},
               std::nullopt};
  return run;
}

void pump_child(ChildRun& run) {
  drain(run.output.get(), run.text);
  drain(run.errors.get(), run.error_text);
  pollfd exited{run.launched.pidfd.get(), POLLIN, 0};
  if (run.exit_code || ::poll(&exited, 1, 0) <= 0) return;
  int status = 0;
  if (::waitpid(run.launched.pid, &status, 0) == run.launched.pid) {
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else {
    run.exit_code = kExitRuntime;
  }
  drain(run.output.get(), run.text);
  drain(run.errors.get(), run.error_text);
}

void end_child(ChildRun& run) {
  if (run.exit_code) return;
  (void)::syscall(SYS_pidfd_send_signal, run.launched.pidfd.get(), SIGKILL, nullptr, 0);
  ::waitpid(run.launched.pid, nullptr, 0);
}

}  // namespace gpuclean::top
