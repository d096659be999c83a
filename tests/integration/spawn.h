// Test support: start processes from an argv, run gpuclean and capture its output, wait with
// deadlines, and kill exactly the processes a test started (through pidfds, never by name).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gpuclean::testing {

struct CommandResult {
  int exit_code = -1;  // exit status, or 128+N when killed by signal N
  std::string out;
  std::string err;
};

// A whole file's contents; empty when it cannot be read (a process that is gone, say).
std::string slurp(const std::string& path);

// Runs argv to completion (bounded by timeout) and captures stdout/stderr.
CommandResult run_command(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));
// The same with `env` ("NAME=VALUE" each) set in the child's environment on top of ours
// (replacing a variable of the same name), e.g. LD_LIBRARY_PATH for a fake libnvidia-ml.so.1.
CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Runs argv on a pseudo-terminal of `columns` columns (stdin, stdout and stderr all the
// terminal, as an interactive user has them), types `input` into it, and captures everything
// the terminal shows into `out` (`err` stays empty). Bounded by timeout.
CommandResult run_in_terminal(const std::vector<std::string>& argv,
                              const std::vector<std::string>& env, unsigned short columns,
                              const std::string& input = "",
                              std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Our environment with `env` ("NAME=VALUE" each) on top, replacing variables of the same name:
// what run_command gives its child.
std::vector<std::string> merged_environment(const std::vector<std::string>& env);

// Starts argv in the background; returns its PID. The caller reaps it with reap().
pid_t spawn(const std::vector<std::string>& argv);
// Spawns argv as PID `want` (a PID that is free now): through /proc/sys/kernel/ns_last_pid, as
// an attacker hands a dead process's PID to a newcomer. Other processes fork meanwhile, so it
// tries a few times; 0 when it could not (not root, another PID namespace, or always beaten),
// with nothing left running.
pid_t spawn_with_pid(pid_t want, const std::vector<std::string>& argv);
// Waits for a child started with spawn(); returns its exit code (or 128+signal).
int reap(pid_t pid);

// Polls predicate until it holds or the deadline passes.
bool wait_until(const std::function<bool()>& predicate,
                std::chrono::milliseconds deadline = std::chrono::seconds(20));

// Reads "pid pid …" from a file a helper wrote, waiting for it to appear.
std::vector<pid_t> wait_for_pids(const std::string& ready_file,
                                 std::chrono::milliseconds deadline = std::chrono::seconds(20));

// The state letter from /proc/PID/stat, or '\0' when the process is gone.
char proc_state(pid_t pid);

// "Alive" as the kill contract means it: some thread of PID is alive. /proc/PID may still be
// there as a zombie its parent has not reaped yet (a helper's launcher is the test's own
// child), or as a zombie leader whose other threads have exited — those count as gone; a
// zombie leader with a live thread does not (docs/facts.md: ask per thread).
bool alive(pid_t pid);
// Polls until no thread of PID is alive, or the deadline passes.
bool wait_gone(pid_t pid, std::chrono::milliseconds deadline = std::chrono::seconds(10));

// A scratch directory removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }
  // Creates an empty file in the directory and returns its path.
  [[nodiscard]] std::string file(const std::string& name) const;

 private:
  std::string path_;
};

// Kills, at destruction, the processes registered with it — only those, identified by pidfds
// opened while they were known to be the test's own — and waits until they are gone; those that
// are the test's children are reaped.
class ProcessReaper {
 public:
  ProcessReaper() = default;
  ~ProcessReaper();
  ProcessReaper(const ProcessReaper&) = delete;
  ProcessReaper& operator=(const ProcessReaper&) = delete;
  ProcessReaper(ProcessReaper&&) = delete;
  ProcessReaper& operator=(ProcessReaper&&) = delete;
  // Returns `pid` as given (a failed fork's -1 is not adopted).
  pid_t adopt(pid_t pid);
  // SIGKILLs every adopted process and waits (bounded) until each has exited.
  void kill_all();

 private:
  std::vector<std::pair<pid_t, int>> pidfds_;
};

}  // namespace gpuclean::testing
