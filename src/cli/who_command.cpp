#include "cli/who_command.h"

#include <ostream>

#include "collect/gather.h"
#include "core/duration.h"
#include "diagnose/unseen.h"
#include "output/who_view.h"
#include "procfs/device_files.h"
#include "procfs/holder_scan.h"

namespace gpuclean::cli {

using collect::read_holders;
using collect::select_device_files;

int run_who(const WhoOptions& options, const Io& io) {
  auto files = select_device_files(options.common, options.paths);
  if (!files.ok()) {
    io.err << "gpuclean: who: " << files.error().message() << '\n';
    return kExitUsage;
  }
  auto proc = procfs::ProcFs::open(options.common.proc_root, options.common.proc_timeout);
  if (!proc.ok()) {
    io.err << "gpuclean: who: " << proc.error().message() << '\n';
    return kExitRuntime;
  }
  if (files->empty() && !options.common.json) {
    io.err << "gpuclean: no NVIDIA device files (/dev/nvidia*) on this machine\n";
  }

  procfs::HolderScan scan =
      procfs::scan_holders(*proc, *files, {.threads = options.common.threads});

  output::WhoReport report;
  report.host = host_name();
  report.time = unix_now();
  report.files = *files;
  report.holders = read_holders(*proc, scan);
  report.stats = scan.stats;
  // `who` never asks NVML: its answer rests on /proc alone.
  const diagnose::Unseen unseen = diagnose::unseen_processes(report.stats, false);
  report.unseen_message = unseen.message;
  report.unseen_decides = unseen.decides;

  if (options.common.json) {
    output::render_who_json(io.out, report);
  } else {
    output::render_who_text(io.out, report);
    if (auto line = output::unreadable_summary(report.stats, report.unseen_message);
        !line.empty()) {
      io.err << line << '\n';
    }
  }
  if (!report.holders.empty()) return kExitDirty;
  return report.unseen_decides ? kExitRuntime : kExitClean;
}

}  // namespace gpuclean::cli
