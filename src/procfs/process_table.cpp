#include "procfs/process_table.h"

#include <vector>

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

std::set<Pid> descendants(const ProcessTable& table, Pid root) {
  std::map<Pid, std::vector<Pid>> children;
  for (const auto& [pid, info] : table) children[info.ppid].push_back(pid);
  std::set<Pid> out;
  std::vector<Pid> queue{root};
  while (!queue.empty()) {
    const Pid parent = queue.back();
    queue.pop_back();
    auto it = children.find(parent);
    if (it == children.end()) continue;
    for (Pid child : it->second) {
      if (out.insert(child).second) queue.push_back(child);
    }
  }
  return out;
}

}  // namespace gpuclean::procfs
