// The command line: every subcommand's options, arguments and help, wired into CLI11. The
// commands' own code (X_command.cpp) sees only the plain option structs of X_command.h: CLI11 is
// header-only, and each file that includes it spent 9-20 s compiling (bench/build_bench.sh), so
// only the files that build or read the parser include it: this header's two halves
// (command_line_look.cpp, command_line_act.cpp), app.cpp, help, usage_checks and completion.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/common.h"
#include "cli/completion.h"
#include "cli/kill_command.h"
#include "cli/metrics_command.h"
#include "cli/plot_command.h"
#include "cli/recorder_command.h"
#include "cli/reset_command.h"
#include "cli/run_command.h"
#include "cli/snapshot_command.h"
#include "cli/status_command.h"
#include "cli/test_hooks.h"
#include "cli/top_command.h"
#include "cli/who_command.h"
#include "core/result.h"

namespace gpuclean::cli {

// Which global options a command offers beyond the rest: `run` and `metrics` have no --json
// (the workload owns stdout; Prometheus's format is the output), `who` no --gpus (every CUDA
// process holds every GPU's file). An option is offered only where it works.
struct OfferedGlobals {
  bool json = true;
  bool gpus = true;
};

// An option taking a value, shown in the help as `value_text` (PID, DURATION: cli/help.h).
template <typename T>
CLI::Option* add_valued(CLI::App& command, const std::string& name, T& into,
                        const std::string& help, const std::string& value_text) {
  return command.add_option(name, into, help)->option_text(value_text);
}

// --json, --gpus, --device-glob, --no-nvml, --threads, --nvml-timeout, --proc-timeout; in the
// test binary also the test inputs `scope` allows (cli/test_hooks.h).
void add_common_options(CLI::App& command, CommonOptions& options, HookScope scope,
                        OfferedGlobals offered = {});

// The common options, and check's tolerances (--max-used, --allow-user, --ignore-pid, --strict).
void add_diagnosis_options(CLI::App& command, StatusOptions& options, HookScope scope,
                           OfferedGlobals offered = {});

// --db PATH: the flight recorder's database. PURPOSE starts the help ("The flight recorder's
// database, for …"); NOTE follows the default path inside its parentheses (", when
// readable"). One place for the option's name and default (recorder::kDefaultDatabase).
void add_history_db_option(CLI::App& command, std::string& db, const std::string& purpose,
                           const std::string& note = "");

// Global options given before the subcommand (`gpuclean --json who`) apply to it, as git's
// do: what the top level `top` parsed into `given` is copied into the subcommand's `into`.
// Given in both places, --device-glob adds up and flags hold; a value given twice must agree.
// An option the subcommand does not take (`gpuclean --json plot`) is an error naming it — never
// silently dropped (issue 13 item 1). `into` null: the subcommand takes none of them.
Status apply_global_options(const CLI::App& top, const CommonOptions& given, const CLI::App& sub,
                            CommonOptions* into);

// The commands that look (command_line_look.cpp).
void add_status_command(CLI::App& app, StatusOptions& options);
void add_check_command(CLI::App& app, StatusOptions& options);
void add_explain_command(CLI::App& app, ExplainOptions& options);
void add_wait_command(CLI::App& app, WaitOptions& options);
void add_who_command(CLI::App& app, WhoOptions& options);
void add_snapshot_command(CLI::App& app, SnapshotOptions& options);
void add_diff_command(CLI::App& app, DiffCommandOptions& options);
void add_plot_command(CLI::App& app, PlotOptions& options);
void add_history_command(CLI::App& app, HistoryOptions& options);
void add_reset_command(CLI::App& app, ResetCommandOptions& options);

// The commands that act, serve or print scripts (command_line_act.cpp).
void add_kill_command(CLI::App& app, KillOptions& options);
void add_run_command(CLI::App& app, RunOptions& options);
void add_top_command(CLI::App& app, TopOptions& options);
void add_recorder_command(CLI::App& app, RecorderOptions& options);
void add_metrics_command(CLI::App& app, MetricsOptions& options);  // builds with metrics only
void add_completion_command(CLI::App& app, CompletionOptions& options);

}  // namespace gpuclean::cli
