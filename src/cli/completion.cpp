#include "cli/completion.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "cli/help.h"
#include "cli/test_hooks.h"
#include "cli/usage_error.h"
#include "collect/gather.h"
#include "completion/model.h"
#include "completion/scripts.h"
#include "output/escape.h"
#include "procfs/holder_scan.h"
#include "procfs/proc_fs.h"

namespace gpuclean::cli {

namespace {

// GPU indexes with their names: NVML through the helper (bounded by --nvml-timeout), else the
// /dev/nvidiaN files (the minor number, which NVML's index usually but not always equals).
int print_gpus(const CompletionOptions& options, const Io& io) {
  auto opened = collect::Gatherer::open(options.common);
  if (auto* error = std::get_if<collect::GatherError>(&opened)) {
    io.err << "gpuclean: completion: " << error->message << '\n';
    return exit_code_of(*error);
  }
  collect::Gatherer& gatherer = *std::get<std::unique_ptr<collect::Gatherer>>(opened);
  gatherer.start_nvml_helper();
  if (auto view = gatherer.query_gpu_view(); view && !view->gpus.empty()) {
    for (const Gpu& gpu : view->gpus) {
      io.out << gpu.index << '\t' << output::escape_terminal(gpu.name) << '\n';
    }
    return kExitClean;
  }
  auto files = collect::select_device_files(options.common);
  if (!files.ok()) return kExitClean;  // Gatherer::open took the same selection
  for (const DeviceFile& file : *files) {
    if (!file.nvidia_minor) continue;
    io.out << *file.nvidia_minor << '\t' << output::escape_terminal(file.path)
           << " (no answer from NVML: the minor number)\n";
  }
  return kExitClean;
}

// The device files' holders from /proc (as `who` finds them), but the node's monitors (never a
// target of kill), with their class and command.
int print_pids(const CompletionOptions& options, const Io& io) {
  auto files = collect::select_device_files(options.common);
  if (!files.ok()) {
    io.err << "gpuclean: completion: " << files.error().message() << '\n';
    return kExitUsage;
  }
  auto proc = procfs::ProcFs::open(options.common.proc_root, options.common.proc_timeout);
  if (!proc.ok()) {
    io.err << "gpuclean: completion: " << proc.error().message() << '\n';
    return kExitRuntime;
  }
  procfs::HolderScan scan =
      procfs::scan_holders(*proc, *files, {.threads = options.common.threads});
  std::vector<Holder> holders = collect::read_holders(*proc, scan);
  std::sort(holders.begin(), holders.end(),
            [](const Holder& a, const Holder& b) { return a.process.pid < b.process.pid; });
  const Pid self = ::getpid();
  for (const Holder& holder : holders) {
    if (holder.process.pid == self || holder.service == NodeService::kMonitorTool) continue;
    const std::string command = holder.process.cmdline.empty()
                                    ? output::escape_terminal(holder.process.comm)
                                    : output::display_command(holder.process.cmdline, 60);
    io.out << holder.process.pid << '\t' << to_string(holder.klass) << ' ' << command << '\n';
  }
  return kExitClean;
}

CLI::Validator one_of(const std::vector<std::string>& words, const std::string& what) {
  return CLI::Validator(
      [words, what](std::string& text) -> std::string {
        if (std::find(words.begin(), words.end(), text) != words.end()) return {};
        return "'" + text + "' is not " + what + " (" + completion::join_words(words, ", ") + ")";
      },
      completion::join_words(words, "|"));
}

}  // namespace

void add_completion_command(CLI::App& app, CompletionOptions& options) {
  CLI::App* completion = app.add_subcommand(
      "completion", "Print a bash, zsh or fish completion script generated from this parser");
  // No --json (the output is a script, or lines for one), no --gpus (--values gpus lists all).
  add_common_options(*completion, options.common, HookScope::kInspect,
                     {.json = false, .gpus = false});
  CLI::Option* shell =
      completion->add_option("shell", options.shell, "The shell: bash, zsh or fish")
          ->option_text("SHELL")
          ->check(
              one_of(completion::shell_words(completion::kShells), "a shell gpuclean completes"));
  completion
      ->add_option("--values", options.values,
                   "Print what the scripts complete, one VALUE<TAB>DESCRIPTION a line: gpus "
                   "(index and name) or pids (the device files' holders, with class and command)")
      ->option_text("KIND")
      ->check(one_of(completion::shell_words(completion::kValueSets), "a kind of value"))
      ->excludes(shell);
  set_help_footer(
      *completion,
      {{"source <(gpuclean completion bash)", "completion in this bash, without installing"},
       {"gpuclean completion fish > ~/.config/fish/completions/gpuclean.fish",
        "installed for one user"},
       {"gpuclean completion --values pids", "the PIDs the scripts offer for kill and explain"}},
      {"0  printed (no candidates is not an error)",
       "2  usage error, or a --device-glob that matches nothing", "3  /proc cannot be opened"});
}

std::string completion_script(const CLI::App& app, const std::string& shell) {
  const completion::Model model = completion::model_of(app);
  if (shell == "bash") return completion::bash_script(model);
  if (shell == "zsh") return completion::zsh_script(model);
  if (shell == "fish") return completion::fish_script(model);
  return {};
}

int run_completion(const CLI::App& app, const CompletionOptions& options, const Io& io) {
  if (options.values == "gpus") return print_gpus(options, io);
  if (options.values == "pids") return print_pids(options, io);
  if (options.shell.empty()) {
    io.err << usage_message("completion", "give a SHELL (bash, zsh or fish) or --values KIND");
    return kExitUsage;
  }
  io.out << completion_script(app, options.shell);
  return kExitClean;
}

}  // namespace gpuclean::cli
