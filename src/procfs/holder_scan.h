// The holder scan: which processes hold which of a set of files, through their descriptor
// tables or memory maps. Complete where fuser and lsof are not: a thread group whose leader is
// a zombie (ps "Zl") has an empty /proc/PID/fd; its files are found through task/TID/fd.
//
// A descriptor or mapping holds a selected file when it *is* that file (core/model.h
// FileIdentity), whatever path, bind mount, mount namespace or second device node it was
// opened through; a look-alike at the same path in another mount namespace is not a holder.
// Descriptors: a statx of /proc/PID/fd/N, which reaches the open file itself. Mappings: the
// inode maps prints, and for selections with device nodes the mapped file's own device number
// through /proc/PID/map_files (root only; without it a mapping of a second node whose
// descriptor was closed is missed: ScanStats::map_files_read says which).
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
  // procfs/rolling_scan.h); stats.processes then counts them.
  std::optional<std::vector<Pid>> only = std::nullopt;
};

struct FileHolding {
  Pid pid = 0;
  // Its start time (stat's field 22), read through the scan's own /proc/PID handle: the
  // identity every later read checks, so that a PID handed on after the scan is another,
  // vanished process, never this holder (issue 48 item 1). 0: not read (gone meanwhile).
  std::uint64_t start_ticks = 0;
  // fds, mapped, deleted, via_thread and nvidia_minor are filled; readable/writable are not
  // (they need one fdinfo read per fd, done only for the holders: see fill_access()).
  std::vector<HeldFile> files;
};

struct HolderScan {
  std::vector<FileHolding> holdings;  // ascending by pid
  ScanStats stats;
  // Every process whose descriptors or maps were refused or not read completely (stats counts
  // them and samples a few): what they hold is not known. Ascending.
  std::vector<Pid> not_read_fully;
};

// Scans every process under proc for the given files. Processes that vanish or cannot be read
// are counted in stats, never reported as errors; those read only in part (maps or
// descriptors past the read deadline) are counted as incomplete. The hot loop stats
// descriptors and reads maps; a link's text is read only for a match (to show it), and
// everything else about a holder afterwards, for the holders alone. Every read of another
// process, the fallback through descriptors included, runs under proc's read deadline.
HolderScan scan_holders(const ProcFs& proc, const std::vector<DeviceFile>& files,
                        const ScanOptions& options);

// Whether pid still holds each of `files` through the same descriptors: a statx (and, to see a
// deletion, a readlink) per held fd instead of its whole table, for re-checking a known holder
// (`top`'s refreshes). False when a descriptor is another file now, was deleted since or is
// gone, or a file was held only through a mapping (its maps must be read: scan it). New
// descriptors it opened since are not seen: a full scan finds them.
bool still_holds(const ProcFs& proc, Pid pid, const std::vector<HeldFile>& files);

// Fills readable/writable of each HeldFile from the fds' open flags and, for a DRM node, its
// clients (HeldFile::drm_clients). Every fdinfo read runs under proc's read deadline, every
// holder's at once: a DRM driver's takes the client's VM lock, which a hung GPU's reset can
// hold, and any device driver's show_fdinfo may block. A read left blocked is not started
// again by a later call until it returns (its descriptor counts as late meanwhile). Returns the
// PIDs whose fdinfo did not answer in time (for a DRM node their clients are missing: what they
// hold is not known), ascending.
std::vector<Pid> fill_access(const ProcFs& proc, std::vector<FileHolding>& holdings);
// The same for one holder (its late reads are only left out).
void fill_access(const ProcFs& proc, FileHolding& holding);

}  // namespace gpuclean::procfs
