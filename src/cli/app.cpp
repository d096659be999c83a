// The command line as a whole: the parser of every subcommand, one parse, the global options
// given before a subcommand applied to it, and the subcommand run (cli/app.h).
#include "cli/app.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command_line.h"
#include "cli/help.h"
#include "cli/usage_checks.h"

namespace gpuclean::cli {
namespace {

constexpr const char* kDescription =
    "gpuclean: find, explain and clean up whatever holds your GPUs";

// Parses `args` (argv without the program name) into `app`: nullopt to go on, or the exit code
// (help, version, usage error).
std::optional<int> parse(CLI::App& app, const std::vector<std::string>& args) {
  // CLI11 wants argv; `gpuclean help kill` has become `gpuclean kill --help` in `args`.
  if (const std::string unknown = unknown_command_asking_help(app, args); !unknown.empty()) {
    std::cerr << usage_message("", unknown);
    return kExitUsage;
  }
  std::vector<const char*> argv = {"gpuclean"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << usage_message(app, e, args);
    return kExitUsage;
  } catch (const UsageError& e) {
    const CLI::App* command = &app;
    while (!command->get_subcommands().empty()) command = command->get_subcommands().back();
    std::cerr << usage_message(command == &app ? "" : command->get_name(), e.what());
    return kExitUsage;
  }
  return std::nullopt;
}

// What every app gets: gpuclean's help format, 80 columns whatever the terminal.
void set_up_app(CLI::App& app) {
  app.formatter(std::make_shared<gpuclean::cli::HelpFormatter>());
  app.set_help_flag("-h,--help", "Show this help");
}

// `gpuclean run` starts a workload: building every other subcommand's parser (CLI11, about a
// millisecond here) would be added to each start (bench/run_bench.sh), so run parses alone.
int run_alone(const std::vector<std::string>& args) {
  CLI::App app{kDescription, "gpuclean"};
  set_up_app(app);
  app.require_subcommand(1, 1);
  RunOptions options;
  add_run_command(app, options);
  if (auto exit_code = parse(app, args)) return *exit_code;
  return run_run(options, Io{std::cout, std::cerr});
}

// Every command's options, filled by one parse of the whole line.
struct Commands {
  // `gpuclean` alone is `gpuclean status`: the top-level app takes status's flags too.
  StatusOptions status;
  StatusOptions check;
  ExplainOptions explain;
  WaitOptions wait;
  KillOptions kill;
  WhoOptions who;
  RunOptions run;  // `gpuclean run` parses alone; here for --help and `gpuclean --json run`
  PlotOptions plot;
  SnapshotOptions snapshot;
  DiffCommandOptions diff;
#ifdef GPUCLEAN_METRICS
  MetricsOptions metrics;
#endif
  TopOptions top;
  RecorderOptions recorder;
  HistoryOptions history;
  ResetCommandOptions reset;
  CompletionOptions completion;
  StatusOptions bare;   // the global options given before a command
  std::string version;  // the release, for gpuclean_build_info

  void add_to(CLI::App& app) {
    add_status_command(app, status);
    add_check_command(app, check);
    add_explain_command(app, explain);
    add_wait_command(app, wait);
    add_kill_command(app, kill);
    add_who_command(app, who);
    add_run_command(app, run);
    add_plot_command(app, plot);
    add_snapshot_command(app, snapshot);
    add_diff_command(app, diff);
#ifdef GPUCLEAN_METRICS
    metrics.version = version;
    add_metrics_command(app, metrics);
#endif
    add_top_command(app, top);
    add_recorder_command(app, recorder);
    add_history_command(app, history);
    add_reset_command(app, reset);
    add_completion_command(app, completion);
    add_common_options(app, bare.common, HookScope::kInspect);
  }

  // Where each subcommand keeps the global options, so that those given before it apply.
  std::map<std::string, CommonOptions*> common_of() {
    return {
        {"status", &status.common},
        {"check", &check.common},
        {"explain", &explain.common},
        {"wait", &wait.status.common},
        {"kill", &kill.common},
        {"who", &who.common},
        {"run", &run.check.common},
        {"plot", nullptr},
        {"snapshot", &snapshot.common},
        {"diff", &diff.common},
        {"completion", &completion.common},
        {"top", &top.status.common},
        {"recorder", &recorder.common},
        {"history", &history.common},
        {"reset", &reset.common},
#ifdef GPUCLEAN_METRICS
        {"metrics", &metrics.status.common},
#endif
    };
  }

  int dispatch(const CLI::App& app, const Io& io) const {
    const bool terminal = ::isatty(STDOUT_FILENO) != 0;
    if (app.got_subcommand("run")) return run_run(run, io);
    if (app.got_subcommand("completion")) return run_completion(app, completion, io);
    if (app.got_subcommand("who")) return run_who(who, io);
    if (app.got_subcommand("top")) return run_top(top, io);
    if (app.got_subcommand("recorder")) return run_recorder_command(recorder, io);
    if (app.got_subcommand("history")) return run_history(history, io);
    if (app.got_subcommand("reset")) return run_reset(reset, io);
    if (app.got_subcommand("snapshot")) return run_snapshot(snapshot, io);
    if (app.got_subcommand("diff")) return run_diff(diff, io);
#ifdef GPUCLEAN_METRICS
    if (app.got_subcommand("metrics")) return run_metrics(metrics, io);
#endif
    if (app.got_subcommand("check") && !check.against.empty()) return run_check_against(check, io);
    if (app.got_subcommand("plot")) return run_plot(plot, io, terminal);
    if (app.got_subcommand("check")) return run_check(check, io);
    if (app.got_subcommand("explain")) return run_explain(explain, io);
    if (app.got_subcommand("kill")) return run_kill(kill, io, ::isatty(STDIN_FILENO) != 0);
    if (app.got_subcommand("wait")) return run_wait(wait, io, ::isatty(STDERR_FILENO) != 0);
    if (app.got_subcommand("status")) return run_status(status, io, terminal);
    return run_status(bare, io, terminal);
  }
};

}  // namespace

int run_command_line(int argc, char** argv, const std::string& version,
                     const std::string& version_text,
                     std::shared_ptr<collect::GpuSampler> early_helper) {
  const std::vector<std::string> args = expand_help_command({argv + 1, argv + argc});
  if (!args.empty() && args.front() == "run") return run_alone(args);
  CLI::App app{kDescription, "gpuclean"};
  set_up_app(app);
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", version_text, "Show the version, commit and what is built in");
  Commands commands;
  commands.version = version;
  commands.add_to(app);
  set_help_footer(
      app,
      {{"gpuclean", "who holds each GPU, what is wrong, and the fix"},
       {"gpuclean kill --leftovers --yes", "end what a dead job left behind, and verify"},
       {"gpuclean run -- python serve.py", "nothing the server starts outlives it"},
       {"gpuclean help kill", "one command's options and examples"}},
      {"0  clean or done", "1  dirty, or something remains", "2  usage error",
       "3  NVML failing or /proc unreadable", "124+  gpuclean run only (gpuclean run --help)"});
  if (auto exit_code = parse(app, args)) return *exit_code;
  if (app.got_subcommand("kill")) {
    const auto at = std::find(args.begin(), args.end(), "kill");
    if (at != args.end()) commands.kill.args.assign(at + 1, args.end());
  }
  const auto common_of = commands.common_of();
  for (const CLI::App* sub : app.get_subcommands()) {
    auto applied =
        apply_global_options(app, commands.bare.common, *sub, common_of.at(sub->get_name()));
    if (!applied.ok()) {
      std::cerr << usage_message(sub->get_name(), applied.error().message());
      return kExitUsage;
    }
  }
  // The commands start_early_helper forks it for; set after the global options were applied
  // (they copy the whole CommonOptions).
  for (CommonOptions* common :
       {&commands.bare.common, &commands.status.common, &commands.check.common,
        &commands.explain.common, &commands.kill.common}) {
    common->early_helper = early_helper;
  }
  early_helper.reset();  // the command's reference is the last: unused, it ends with the command
  return commands.dispatch(app, Io{std::cout, std::cerr});
}

}  // namespace gpuclean::cli
