#include "cli/who_command.h"

#include <algorithm>
#include <map>
#include <ostream>

#include "cli/usage_error.h"
#include "collect/gather.h"
#include "core/duration.h"
#include "diagnose/unseen.h"
#include "output/who_view.h"
#include "procfs/device_files.h"
#include "procfs/holder_scan.h"

namespace gpuclean::cli {

using collect::read_holders;
using collect::select_device_files;

namespace {

// What --pid names: the processes to scan, and the start time each must have where one was given.
struct NamedProcesses {
  std::vector<Pid> pids;                     // thread-group leaders, ascending
  std::map<Pid, std::uint64_t> start_ticks;  // PID@START
  std::string error;                         // a usage error, or empty
};

NamedProcesses usage(std::string error) {
  NamedProcesses failed;
  failed.error = std::move(error);
  return failed;
}

NamedProcesses named_processes(const procfs::ProcFs& proc, const std::vector<std::string>& texts) {
  NamedProcesses named;
  for (const std::string& text : texts) {
    const auto selector = parse_pid_selector(text);  // pid_selector_check let only these in
    if (!selector) return usage("'" + text + "' is not a PID");
    // /proc/TID answers for a thread too, with the whole group's descriptors: a thread's ID
    // (a range of new PIDs holds threads as well) is not a process of its own.
    if (proc.thread_group_of(selector->pid)) continue;
    // PID@START of a process that is gone, or whose PID another process took: not scanned at
    // all (scanned, an unreadable newcomer would count as unseen and could turn the verdict
    // unknown over a process nobody named).
    if (selector->start_ticks && proc.start_ticks(selector->pid) != selector->start_ticks) {
      continue;
    }
    named.pids.push_back(selector->pid);
    if (!selector->start_ticks) continue;
    const auto [at, added] = named.start_ticks.emplace(selector->pid, *selector->start_ticks);
    if (!added && at->second != *selector->start_ticks) {
      return usage("pid " + std::to_string(selector->pid) + " is given with two start times");
    }
  }
  std::sort(named.pids.begin(), named.pids.end());
  named.pids.erase(std::unique(named.pids.begin(), named.pids.end()), named.pids.end());
  return named;
}

// PID@START names that process only: a holder whose PID was reused since is another process.
void keep_named_starts(std::vector<Holder>& holders, const NamedProcesses& named) {
  std::erase_if(holders, [&named](const Holder& holder) {
    const auto start = named.start_ticks.find(holder.process.pid);
    return start != named.start_ticks.end() && start->second != holder.process.start_ticks;
  });
}

}  // namespace

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

  procfs::ScanOptions scan_options{.threads = options.common.threads};
  NamedProcesses named;
  if (!options.pids.empty()) {
    named = named_processes(*proc, options.pids);
    if (!named.error.empty()) {
      io.err << "gpuclean: who: " << named.error << '\n';
      return kExitUsage;
    }
    scan_options.only = named.pids;
  }
  procfs::HolderScan scan = procfs::scan_holders(*proc, *files, scan_options);

  output::WhoReport report;
  report.host = host_name();
  report.time = unix_now();
  report.files = *files;
  report.holders = read_holders(*proc, scan);
  keep_named_starts(report.holders, named);
  if (!options.pids.empty()) report.named_pids = named.pids;
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
