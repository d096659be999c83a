// A snapshot of processes keyed by PID, and the parent-link relations over it. Pure.
#pragma once

#include <cstddef>
#include <map>
#include <set>

#include "core/model.h"

namespace gpuclean {

using ProcessTable = std::map<Pid, ProcessInfo>;

// Every process below `root` in the parent links of `table` (not `root` itself).
std::set<Pid> descendants(const ProcessTable& table, Pid root);

// The parent chain of `pid` in `table` (its parent, grandparent, … up to a PID the table
// lacks), not `pid` itself. Bounded: a cycle in a corrupt table ends the walk.
std::set<Pid> ancestors(const ProcessTable& table, Pid pid);

// How many parent links lead from `pid` to a PID the table lacks (a root is 0).
int depth_in(const ProcessTable& table, Pid pid);

// depth_in of every process of `table` at once. Each process's parent link is followed once
// (`links`: at most the table's size), where depth_in for each process follows every link
// once per descendant: quadratic in a chain of processes, which a user can fork (issue 33:
// kill's plan of a chain of 1,716 took 5.8 s). The same answers as depth_in, cycles in a
// corrupt table included: a process's depth counts its distinct ancestors.
struct TreeDepths {
  std::map<Pid, int> depth;
  std::size_t links = 0;
};
TreeDepths depths_in(const ProcessTable& table);

}  // namespace gpuclean
