#include "cli/who_command.h"

#include <algorithm>
#include <ostream>

#include "cli/usage_error.h"
#include "collect/gather.h"
#include "core/diagnostics.h"
#include "core/duration.h"
#include "diagnose/unseen.h"
#include "output/who_view.h"
#include "procfs/device_files.h"
#include "procfs/holder_scan.h"

namespace gpuclean::cli {

using collect::read_holders;
using collect::select_device_files;

namespace {

// The processes `who --pid` scans: thread-group leaders that are still the process each
// PID@START names, ascending.
std::vector<Pid> named_processes(const procfs::ProcFs& proc, const PidSelectors& named) {
  std::vector<Pid> pids;
  for (const Pid pid : named.pids) {
    // /proc/TID answers for a thread too, with the whole group's descriptors: a thread's ID
    // (a range of new PIDs holds threads as well) is not a process of its own.
    if (proc.thread_group_of(pid)) continue;
    // PID@START of a process that is gone, or whose PID another process took: not scanned at
    // all (scanned, an unreadable newcomer would count as unseen and could turn the verdict
    // unknown over a process nobody named).
    const auto start = named.start_ticks.find(pid);
    if (start != named.start_ticks.end() && proc.start_ticks(pid) != start->second) continue;
    pids.push_back(pid);
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

// PID@START names that process only: a holder whose PID was reused since is another process.
void keep_named_starts(std::vector<Holder>& holders, const PidSelectors& named) {
  std::erase_if(holders, [&named](const Holder& holder) {
    const auto start = named.start_ticks.find(holder.process.pid);
    return start != named.start_ticks.end() && start->second != holder.process.start_ticks;
  });
}

}  // namespace

int run_who(const WhoOptions& options, const Io& io) {
  auto files = select_device_files(options.common, options.paths);
  if (!files.ok()) {
    say(io.err, "who") << files.error().message() << '\n';
    return kExitUsage;
  }
  auto proc = procfs::ProcFs::open(options.common.proc_root, options.common.proc_timeout);
  if (!proc.ok()) {
    say(io.err, "who") << proc.error().message() << '\n';
    return kExitRuntime;
  }
  if (files->empty() && !options.common.json) {
    say(io.err) << "no GPU device files (/dev/nvidia*, or DRM nodes of an AMD or Intel GPU) "
                   "on this machine\n";
  }

  procfs::ScanOptions scan_options{.threads = options.common.threads};
  PidSelectors named;
  if (!options.pids.empty()) {
    auto parsed = parse_pid_selectors(options.pids);
    if (!parsed.ok()) {
      say(io.err, "who") << parsed.error().context << '\n';
      return kExitUsage;
    }
    named = std::move(parsed).value();
    scan_options.only = named_processes(*proc, named);
  }
  procfs::HolderScan scan = procfs::scan_holders(*proc, *files, scan_options);

  output::WhoReport report;
  report.host = host_name();
  report.time = unix_now();
  report.files = *files;
  report.holders = read_holders(*proc, scan);
  keep_named_starts(report.holders, named);
  if (scan_options.only) report.named_pids = *scan_options.only;
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
