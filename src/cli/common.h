// What every subcommand shares: the common flags (docs/reference.md "Commands"); the exit codes
// are core/exit_code.h's.
#pragma once

#include <signal.h>

#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "collect/gather.h"
#include "core/exit_code.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace gpuclean::cli {

// The global options (docs/reference.md): what to collect, plus how to answer.
struct CommonOptions : collect::CollectOptions {
  bool json = false;
  std::string gpus = "all";
};

// Where the command's output and diagnostics go; injected so tests can capture them.
struct Io {
  std::ostream& out;
  std::ostream& err;
};

// The exit code for a failed collection: 2 for a bad selection, 3 for an unreadable /proc.
int exit_code_of(const collect::GatherError& error);

// Opens `gatherer`; when it cannot, says why (under `topic`) and returns the exit code.
std::optional<int> open_gatherer(const collect::CollectOptions& options, const Io& io,
                                 std::unique_ptr<collect::Gatherer>& gatherer,
                                 std::string_view topic = {});

// "0,2", "0-3", "all" → indices; nullopt for "all". Errors name the bad part.
// A PCI address ("0000:c3:00.0", or NVML's "00000000:C3:00.0") names the GPU at that address
// in `view`; without a view (the commands that parse --gpus before they look: kill, run, top,
// recorder) it is an error that says which commands take one.
Result<std::optional<std::set<unsigned>>> parse_gpu_list(const std::string& text,
                                                         const GpuView* view = nullptr);
// Whether a --gpus list names a GPU by PCI address (it then needs the GPUs' view to parse).
bool names_pci_address(const std::string& text);

std::string host_name();

// The terminal's width for output on `fd`: $COLUMNS when set to a number (so scripts and tests
// can ask for a width), else the terminal's own, else `fallback` (not a terminal;
// output::kNoWidthLimit for output that should stay whole).
int terminal_columns(int fd, int fallback);

// SIGINT, SIGTERM and SIGHUP, blocked in every thread (those started later inherit the mask)
// and read from a signalfd that a server's or a follower's poll waits on: the command stops
// between two steps, with exit 0, and no handler runs in a random thread.
class StopSignals {
 public:
  StopSignals();
  // Takes the signals that stopped the command before unblocking them: a pending SIGTERM left
  // in place would kill the process on the way out (exit 143 instead of 0).
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  [[nodiscard]] const UniqueFd& fd() const { return fd_; }

 private:
  sigset_t signals_{};
  sigset_t previous_{};
  UniqueFd fd_;
};

}  // namespace gpuclean::cli
