#include "output/tree_text.h"

#include <algorithm>
#include <map>
#include <set>

namespace gpuclean::output {

std::string tree_indent(int depth) {
  return std::string(static_cast<std::size_t>(std::clamp(depth, 0, kTreeLevels)) * 2, ' ');
}

std::string depth_mark(int depth) {
  if (depth <= kTreeLevels) return "";
  return "[depth " + std::to_string(depth) + "] ";
}

std::vector<std::pair<const Holder*, int>> tree_order(const std::vector<const Holder*>& group) {
  // Children by parent PID, in the group's order: one pass, where looking through the whole
  // group for each row's children was quadratic.
  std::map<Pid, std::vector<const Holder*>> children;
  std::set<Pid> pids;
  for (const Holder* h : group) pids.insert(h->process.pid);
  for (const Holder* h : group) {
    const ProcessInfo& p = h->process;
    if (p.ppid != p.pid && pids.count(p.ppid) > 0) children[p.ppid].push_back(h);
  }
  std::vector<std::pair<const Holder*, int>> rows;
  rows.reserve(group.size());
  std::set<const Holder*> visited;
  std::vector<std::pair<const Holder*, int>> stack;
  auto walk = [&](const Holder* root) {
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      const auto [h, depth] = stack.back();
      stack.pop_back();
      if (!visited.insert(h).second) continue;
      rows.emplace_back(h, depth);
      const auto kids = children.find(h->process.pid);
      if (kids == children.end()) continue;
      // Reversed onto the stack, so that siblings come out in the group's order.
      for (auto it = kids->second.rbegin(); it != kids->second.rend(); ++it) {
        stack.emplace_back(*it, depth + 1);
      }
    }
  };
  for (const Holder* h : group) {
    const ProcessInfo& p = h->process;
    if (p.ppid == p.pid || pids.count(p.ppid) == 0) walk(h);
  }
  for (const Holder* h : group) walk(h);  // on a cycle of parent links: no root reached it
  return rows;
}

}  // namespace gpuclean::output
