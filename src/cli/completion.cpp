#include "cli/completion.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/usage_error.h"
#include "collect/gather.h"
#include "completion/model.h"
#include "completion/scripts.h"
#include "core/diagnostics.h"
#include "output/escape.h"
#include "procfs/holder_scan.h"
#include "procfs/proc_fs.h"

namespace gpuclean::cli {

namespace {

// GPU indexes with their names: NVML through the helper (bounded by --nvml-timeout), else the
// /dev/nvidiaN files (the minor number, which NVML's index usually but not always equals).
int print_gpus(const CompletionOptions& options, const Io& io) {
  std::unique_ptr<collect::Gatherer> gatherer;
  if (auto failed = open_gatherer(options.common, io, gatherer, "completion")) return *failed;
  gatherer->start_nvml_helper();
  if (auto view = gatherer->query_gpu_view(); view && !view->gpus.empty()) {
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
    say(io.err, "completion") << files.error().message() << '\n';
    return kExitUsage;
  }
  auto proc = procfs::ProcFs::open(options.common.proc_root, options.common.proc_timeout);
  if (!proc.ok()) {
    say(io.err, "completion") << proc.error().message() << '\n';
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

}  // namespace

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
