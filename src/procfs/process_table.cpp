#include "procfs/process_table.h"

namespace gpuclean::procfs {

ProcessTable read_process_table(const ProcFs& proc) {
  ProcessTable table;
  auto pids = proc.list_pids();
  if (!pids.ok()) return table;
  // On worker threads, each read bounded: a process with a locked memory map costs the table
  // one read deadline, not a hang (procfs/proc_fs.h).
  std::vector<Result<ProcessInfo>> infos = proc.read_processes(*pids);
  for (auto& info : infos) {
    if (!info.ok()) continue;
    const Pid pid = info->pid;
    table.emplace(pid, std::move(info).value());
  }
  return table;
}

}  // namespace gpuclean::procfs
