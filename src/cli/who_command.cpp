#include "cli/who_command.h"

#include <ostream>

#include "diagnose/classify.h"
#include "output/who_view.h"
#include "procfs/device_files.h"
#include "procfs/holder_scan.h"

namespace gpuclean::cli {

void add_who_command(CLI::App& app, WhoOptions& options) {
  CLI::App* who = app.add_subcommand(
      "who", "Every process holding the device files, including zombie-led thread groups");
  add_common_options(*who, options.common);
  who->add_option("paths", options.paths, "Files to look at instead of the NVIDIA device files");
}

int run_who(const WhoOptions& options, const Io& io) {
  if (options.common.gpus != "all") {
    io.err << "gpuclean: who: --gpus is not supported: which GPU a process uses comes from NVML, "
              "not from the device files it holds (every CUDA process holds every GPU's file); "
              "use `gpuclean status --gpus`\n";
    return kExitUsage;
  }
  procfs::DeviceSelection selection;
  selection.must_match = options.paths;
  for (const auto& glob : options.common.device_globs) selection.must_match.push_back(glob);
  const bool defaults = selection.must_match.empty();
  if (defaults) selection.patterns = procfs::default_nvidia_globs();

  auto files = procfs::expand_device_files(selection);
  if (!files.ok()) {
    io.err << "gpuclean: who: " << files.error().message() << '\n';
    return kExitUsage;
  }
  auto proc = procfs::ProcFs::open(options.common.proc_root);
  if (!proc.ok()) {
    io.err << "gpuclean: who: " << proc.error().message() << '\n';
    return kExitRuntime;
  }
  if (files->empty() && !options.common.json) {
    io.err << "gpuclean: no NVIDIA device files (/dev/nvidia*) on this machine\n";
  }

  const procfs::HolderScan scan =
      procfs::scan_holders(*proc, *files, {.threads = options.common.threads});

  output::WhoReport report;
  report.host = host_name();
  report.time = unix_now();
  report.files = *files;
  report.stats = scan.stats;
  for (procfs::FileHolding holding : scan.holdings) {
    auto process = proc->read_process(holding.pid);
    if (!process.ok()) {
      // Exited between the scan and now: it holds nothing any more.
      if (process.error().is_vanished()) ++report.stats.vanished;
      continue;
    }
    procfs::fill_access(*proc, holding);
    Holder holder;
    holder.process = std::move(process).value();
    holder.devices = std::move(holding.files);
    holder.klass = diagnose::classify_from_proc(holder.process);
    report.holders.push_back(std::move(holder));
  }

  if (options.common.json) {
    output::render_who_json(io.out, report);
  } else {
    output::render_who_text(io.out, report);
    if (auto line = output::unreadable_summary(report.stats); !line.empty()) io.err << line << '\n';
  }
  return report.holders.empty() ? kExitClean : kExitDirty;
}

}  // namespace gpuclean::cli
