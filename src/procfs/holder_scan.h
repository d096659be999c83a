// The holder scan: which processes hold which of a set of files, through their descriptor
// tables or memory maps. Complete where fuser and lsof are not: a thread group whose leader is
// a zombie (ps "Zl") has an empty /proc/PID/fd; its files are found through task/TID/fd.
#pragma once

#include <optional>
#include <vector>

#include "core/model.h"
#include "procfs/device_files.h"
#include "procfs/proc_fs.h"

namespace gpuclean::procfs {

struct ScanOptions {
  // Worker threads; the PID list is shared out in small chunks. 0: one per core (at most 16),
  // fewer for a small process table.
  unsigned threads = 0;
  // Only these processes instead of every one in /proc (`top` between its full scans,
  // collect/rolling_scan.h); stats.processes then counts them.
  std::optional<std::vector<Pid>> only = std::nullopt;
};

struct FileHolding {
  Pid pid = 0;
  // fds, mapped, deleted, via_thread and nvidia_minor are filled; readable/writable are not
  // (they need one fdinfo read per fd, done only for the holders: see fill_access()).
  std::vector<HeldFile> files;
};

struct HolderScan {
  std::vector<FileHolding> holdings;  // ascending by pid
  ScanStats stats;
};

// Scans every process under proc for the given files. Processes that vanish or cannot be read
// are counted in stats, never reported as errors. The hot loop reads only fd links and maps:
// everything else about a holder is read afterwards, for the holders alone.
HolderScan scan_holders(const ProcFs& proc, const std::vector<DeviceFile>& files,
                        const ScanOptions& options);

// Whether pid still holds each of `files` through the same descriptors: one readlink per held
// fd instead of its whole table, for re-checking a known holder (`top`'s refreshes). False when
// a descriptor changed or is gone, or a file was held only through a mapping (its maps must be
// read: scan it). New descriptors it opened since are not seen: a full scan finds them.
bool still_holds(const ProcFs& proc, Pid pid, const std::vector<HeldFile>& files);

// Fills readable/writable of each HeldFile from the fds' open flags.
void fill_access(const ProcFs& proc, FileHolding& holding);

}  // namespace gpuclean::procfs
