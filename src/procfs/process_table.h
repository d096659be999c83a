// A snapshot of every process /proc shows, and the tree relations kill and run need.
#pragma once

#include <map>
#include <set>

#include "core/model.h"
#include "procfs/proc_fs.h"

namespace gpuclean::procfs {

using ProcessTable = std::map<Pid, ProcessInfo>;

// Every process that could be read; vanished and unreadable ones are left out (a snapshot of a
// moving system, not an error).
ProcessTable read_process_table(const ProcFs& proc);

// Every process below `root` in the parent links of `table` (not `root` itself).
std::set<Pid> descendants(const ProcessTable& table, Pid root);

}  // namespace gpuclean::procfs
