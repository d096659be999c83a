#include "core/process_tree.h"

#include <vector>

namespace gpuclean {
namespace {

// A PID namespace holds at most 4 million PIDs (pid_max's limit): no real chain is longer.
constexpr int kMaxChain = 1 << 22;

// A depth found, and whether the process is on a cycle of parent links (then it is among its
// own ancestors, and a child of it has no more ancestors than it has).
struct Found {
  int depth = 0;
  bool on_cycle = false;
};

// depths_in's walk from one process up to a parent whose depth is known (or a root, or the
// walk's own path: a cycle), then down again, giving each process on the way its depth.
void walk_up(const ProcessTable& table, Pid start, std::map<Pid, Found>& found,
             std::size_t& links) {
  std::vector<Pid> path;               // start, its parent, its grandparent, …
  std::map<Pid, std::size_t> on_path;  // pid → its index in path
  for (Pid at = start;;) {
    on_path.emplace(at, path.size());
    path.push_back(at);
    ++links;
    const Pid parent = table.at(at).ppid;
    if (parent <= 0 || table.count(parent) == 0) {
      found[at] = {parent <= 0 ? 0 : 1, false};  // a root; a parent the table lacks is 1 link
      path.pop_back();
      break;
    }
    if (found.count(parent) > 0) break;
    if (const auto cycle = on_path.find(parent); cycle != on_path.end()) {
      // Every process of the cycle has all of it as ancestors, itself included.
      const auto length = static_cast<int>(path.size() - cycle->second);
      for (std::size_t k = cycle->second; k < path.size(); ++k) found[path[k]] = {length, true};
      path.resize(cycle->second);
      break;
    }
    at = parent;
  }
  for (std::size_t k = path.size(); k-- > 0;) {
    const Found& parent = found.at(table.at(path[k]).ppid);
    found[path[k]] = {parent.depth + (parent.on_cycle ? 0 : 1), false};
  }
}

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

TreeDepths depths_in(const ProcessTable& table) {
  std::map<Pid, Found> found;
  TreeDepths out;
  for (const auto& entry : table) {
    if (found.count(entry.first) == 0) walk_up(table, entry.first, found, out.links);
  }
  for (const auto& [pid, f] : found) out.depth.emplace_hint(out.depth.end(), pid, f.depth);
  return out;
}

}  // namespace gpuclean
