#include "procfs/process_table.h"

namespace gpuclean::procfs {

ProcessTable read_process_table(const ProcFs& proc) {
  ProcessTable table;
  auto pids = proc.list_pids();
  if (!pids.ok()) return table;
  for (Pid pid : *pids) {
    if (auto info = proc.read_process(pid); info.ok()) table.emplace(pid, std::move(info).value());
  }
  return table;
}

}  // namespace gpuclean::procfs
