// What every subcommand shares: the common flags (docs/reference.md "Commands"); the exit codes
// are core/exit_code.h's.
#pragma once

#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collect/gather.h"
#include "core/exit_code.h"
#include "core/result.h"

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

}  // namespace gpuclean::cli
