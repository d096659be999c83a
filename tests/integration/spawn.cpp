#include "spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace gpuclean::testing {
namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& arg : argv) out.push_back(const_cast<char*>(arg.c_str()));
  out.push_back(nullptr);
  return out;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> merged_environment(const std::vector<std::string>& env) {
  std::vector<std::string> entries = env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('=') + 1);
    if (std::none_of(env.begin(), env.end(),
                     [&name](const std::string& set) { return set.rfind(name, 0) == 0; })) {
      entries.push_back(entry);
    }
  }
  return entries;
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  return run_command(argv, {}, timeout);
}

CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          std::chrono::milliseconds timeout) {
  const std::vector<std::string> entries = merged_environment(env);
  auto envp = c_argv(entries);
  TempDir dir;
  const std::string out_path = dir.path() + "/out";
  const std::string err_path = dir.path() + "/err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  pid_t pid = 0;
  auto args = c_argv(argv);
  CommandResult result;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data()) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    result.err = "spawn failed";
    return result;
  }
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);  // our own child
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  result.exit_code = decode_status(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

CommandResult run_in_terminal(const std::vector<std::string>& argv,
                              const std::vector<std::string>& env, unsigned short columns,
                              const std::string& input, std::chrono::milliseconds timeout) {
  const std::vector<std::string> entries = merged_environment(env);
  auto envp = c_argv(entries);
  auto args = c_argv(argv);
  CommandResult result;
  winsize size{};
  size.ws_row = 40;
  size.ws_col = columns;
  int terminal = -1;
  const pid_t pid = ::forkpty(&terminal, nullptr, nullptr, &size);
  if (pid < 0) {
    result.err = "forkpty failed";
    return result;
  }
  if (pid == 0) {
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  // Typed ahead: the terminal keeps it until the program reads its line.
  if (!input.empty()) {
    [[maybe_unused]] const ssize_t typed = ::write(terminal, input.data(), input.size());
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  for (;;) {
    pollfd ready{terminal, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);  // our own child
      break;
    }
    if (::poll(&ready, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::read(terminal, buffer, sizeof(buffer));
    if (n <= 0) break;  // EIO: the program and everything it started closed the terminal
    result.out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(terminal);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = decode_status(status);
  return result;
}

pid_t spawn(const std::vector<std::string>& argv) {
  pid_t pid = 0;
  auto args = c_argv(argv);
  if (posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
  return pid;
}

pid_t spawn_with_pid(pid_t want, const std::vector<std::string>& argv) {
  constexpr int kTries = 200;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    {
      std::ofstream last("/proc/sys/kernel/ns_last_pid");
      if (!last) return 0;
      last << (want - 1);
      last.flush();
      if (!last) return 0;
    }
    const pid_t pid = spawn(argv);
    if (pid == want) return pid;
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      reap(pid);
    }
  }
  return 0;
}

int reap(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return decode_status(status);
}

bool wait_until(const std::function<bool()>& predicate, std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return predicate();
}

std::vector<pid_t> wait_for_pids(const std::string& ready_file,
                                 std::chrono::milliseconds deadline) {
  // Not just "the file exists": a shell's `echo $$ > FILE` creates FILE before it writes, and
  // a reader in between saw no PID (RunTest.FirstSigintReachesTheWorkloadSecondEscalates failed
  // so in CI's ASan pass of 4b82c48). One write(2) carries the whole line, so a PID read is all.
  std::vector<pid_t> pids;
  auto read_pids = [&] {
    pids.clear();
    std::istringstream in(slurp(ready_file));
    pid_t pid = 0;
    while (in >> pid) pids.push_back(pid);
    return !pids.empty();
  };
  wait_until(read_pids, deadline);
  return pids;
}

namespace {

char stat_state(const std::string& stat) {
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return '\0';
  return stat[close + 2];
}

// No thread of PID is alive (see alive()).
bool no_live_thread(pid_t pid) {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const char state = stat_state(slurp(it->path().string() + "/stat"));
    if (state != '\0' && state != 'Z' && state != 'X') return false;
  }
  return true;
}

}  // namespace

char proc_state(pid_t pid) {
  return stat_state(slurp("/proc/" + std::to_string(pid) + "/stat"));
}

bool alive(pid_t pid) {
  return !no_live_thread(pid);
}

bool wait_gone(pid_t pid, std::chrono::milliseconds deadline) {
  return wait_until([&] { return no_live_thread(pid); }, deadline);
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "gpuclean-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::file(const std::string& name) const {
  const std::string path = path_ + "/" + name;
  std::ofstream(path) << "";
  return path;
}

pid_t ProcessReaper::adopt(pid_t pid) {
  if (pid <= 0) return pid;
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) pidfds_.emplace_back(pid, fd);
  return pid;
}

ProcessReaper::~ProcessReaper() {
  kill_all();
}

void ProcessReaper::kill_all() {
  for (const auto& [pid, fd] : pidfds_) ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
  for (const auto& [pid, fd] : pidfds_) {
    // Readable when the process has exited (or is a zombie nobody reaps): bounded wait.
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 5000);
    ::close(fd);
    // Reaped when it is the test's own child (a launcher's children are the launcher's to reap:
    // ECHILD here).
    ::waitpid(pid, nullptr, WNOHANG);
  }
  pidfds_.clear();
}

}  // namespace gpuclean::testing
