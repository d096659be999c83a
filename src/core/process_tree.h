// A snapshot of processes keyed by PID, and the parent-link relations over it. Pure.
#pragma once

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

}  // namespace gpuclean
