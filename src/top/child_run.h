// A command top runs as a child (`gpuclean kill …`, the same binary), its output collected for
// a pane while the screen keeps refreshing: the kill engine as the command line has it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/unique_fd.h"
#include "ops/launch.h"

namespace gpuclean::top {

struct ChildRun {
  ops::Launched launched;
  UniqueFd output;  // its stdout (and stderr, unless split), non-blocking
  UniqueFd errors;  // its stderr when split, non-blocking
  std::string text;
  std::string error_text;
  std::optional<int> exit_code;  // once reaped: its status, or 128 + the signal that ended it
};

// How top runs a child.
struct ChildMode {
  // It acts (the kill itself): it runs in a session of its own (Ctrl-C at the terminal does not
  // reach it) and outlives top, since a teardown stopped half-way could leave its targets
  // stopped. Otherwise (a dry run) it dies with top.
  bool acting = false;
  // Its stderr apart from its stdout (a JSON document on stdout stays whole).
  bool split_errors = false;
};

// Starts `program` with `argv`; nullopt with `error` set when it cannot be started.
std::optional<ChildRun> start_child(const std::string& program,
                                    const std::vector<std::string>& argv, ChildMode mode,
                                    std::string& error);

// Reads what the child wrote; reaps it once its pidfd says it exited. Its own children (kill's
// NVML helper) may keep the pipe open, so exit is told by the pidfd, never by EOF. Never blocks.
void pump_child(ChildRun& run);

// Ends a child that does not act (a plan): SIGKILL through its pidfd, then reaps it.
void end_child(ChildRun& run);

}  // namespace gpuclean::top
