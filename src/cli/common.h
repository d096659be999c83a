// What every subcommand shares: the common flags (docs/reference.md "Commands"); the exit codes
// are core/exit_code.h's.
#pragma once

#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "collect/gather.h"
#include "core/exit_code.h"
#include "core/result.h"

namespace gpuclean::cli {

// The global options (docs/reference.md): what to collect, plus how to answer.
struct CommonOptions : collect::CollectOptions {
  bool json = false;
  std::string gpus = "all";
};

enum class HookScope;  // cli/test_hooks.h

// Which global options a command offers beyond the rest: `run` and `metrics` have no --json
// (the workload owns stdout; Prometheus's format is the output), `who` no --gpus (every CUDA
// process holds every GPU's file). An option is offered only where it works.
struct OfferedGlobals {
  bool json = true;
  bool gpus = true;
};

// --json, --gpus, --device-glob, --no-nvml, --threads, --nvml-timeout, --proc-timeout; in the
// test binary also the test inputs `scope` allows (cli/test_hooks.h).
void add_common_options(CLI::App& command, CommonOptions& options, HookScope scope,
                        OfferedGlobals offered = {});

// Where the command's output and diagnostics go; injected so tests can capture them.
struct Io {
  std::ostream& out;
  std::ostream& err;
};

// Global options given before the subcommand (`gpuclean --json who`) apply to it, as git's
// do: what the top level `top` parsed into `given` is copied into the subcommand's `into`.
// Given in both places, --device-glob adds up and flags hold; a value given twice must agree.
// An option the subcommand does not take (`gpuclean --json plot`) is an error naming it — never
// silently dropped (issue 13 item 1). `into` null: the subcommand takes none of them.
Status apply_global_options(const CLI::App& top, const CommonOptions& given, const CLI::App& sub,
                            CommonOptions* into);

// The exit code for a failed collection: 2 for a bad selection, 3 for an unreadable /proc.
int exit_code_of(const collect::GatherError& error);

// "0,2", "0-3", "all" → indices; nullopt for "all". Errors name the bad part.
Result<std::optional<std::set<unsigned>>> parse_gpu_list(const std::string& text);

std::string host_name();

// The terminal's width for output on `fd`: $COLUMNS when set to a number (so scripts and tests
// can ask for a width), else the terminal's own, else `fallback` (not a terminal;
// output::kNoWidthLimit for output that should stay whole).
int terminal_columns(int fd, int fallback);

}  // namespace gpuclean::cli
