// Which files count as "the device": glob patterns expanded to canonical paths.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace gpuclean::procfs {

// docs/reference.md's default: the NVIDIA device files.
const std::vector<std::string>& default_nvidia_globs();

// Expands each pattern with glob(3), canonicalises the matches (the path is what gpuclean
// shows) and takes each file's identity with stat(2): holders are matched by that identity
// (procfs/holder_scan.h), never by the path. Paths of one file (a second node with the same
// device number, a hard link, a symlink) are one entry, the first path in sort order; the
// result is sorted by path.
//
// Errors (Error::errnum 0, context says which pattern): an empty or malformed pattern
// (unbalanced '['); a pattern in `must_match` that matches nothing.
struct DeviceSelection {
  std::vector<std::string> patterns;    // globs that may match nothing (the defaults)
  std::vector<std::string> must_match;  // globs or paths the user named: must match something
};
Result<std::vector<DeviceFile>> expand_device_files(const DeviceSelection& selection);

// Marks each of `files` that is one of `nodes` (the DRM nodes of the GPUs sysfs lists, and
// /dev/kfd) by identity, whatever path selected it; with `add_missing`, also adds the nodes no
// file is (the default selection). Sorted by path again.
std::vector<DeviceFile> mark_drm_nodes(std::vector<DeviceFile> files,
                                       const std::vector<DeviceFile>& nodes, bool add_missing);

// Checks a glob pattern for the mistakes glob(3) silently accepts: empty, unbalanced '['.
std::optional<std::string> glob_syntax_error(const std::string& pattern);

}  // namespace gpuclean::procfs
