#include "core/process_tree.h"

#include <vector>

namespace gpuclean {
namespace {

// A PID namespace holds at most 4 million PIDs (pid_max's limit): no real chain is longer.
constexpr int kMaxChain = 1 << 22;

}  // namespace

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
      if (child != root && out.insert(child).second) queue.push_back(child);
    }
  }
  return out;
}

std::set<Pid> ancestors(const ProcessTable& table, Pid pid) {
  std::set<Pid> out;
  auto it = table.find(pid);
  for (int steps = 0; it != table.end() && steps < kMaxChain; ++steps) {
    const Pid parent = it->second.ppid;
    if (parent <= 0 || !out.insert(parent).second) break;
    it = table.find(parent);
  }
  return out;
}

int depth_in(const ProcessTable& table, Pid pid) {
  return static_cast<int>(ancestors(table, pid).size());
}

}  // namespace gpuclean
