// A snapshot of every process /proc shows, and the tree relations kill and run need.
#pragma once

#include <map>
#include <set>

#include "core/model.h"
#include "core/process_tree.h"
#include "procfs/proc_fs.h"

namespace gpuclean::procfs {

using gpuclean::descendants;
using gpuclean::ProcessTable;

// Every process that could be read; vanished and unreadable ones are left out (a snapshot of a
// moving system, not an error).
ProcessTable read_process_table(const ProcFs& proc);

}  // namespace gpuclean::procfs
