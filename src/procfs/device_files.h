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

// Expands each pattern with glob(3) and canonicalises the matches (fd links name the real
// path, so a symlinked pattern must be resolved to match). Duplicates are dropped; the result
// is sorted by path.
//
// Errors (Error::errnum 0, context says which pattern): an empty or malformed pattern
// (unbalanced '['); a pattern in `must_match` that matches nothing.
struct DeviceSelection {
  std::vector<std::string> patterns;    // globs that may match nothing (the defaults)
  std::vector<std::string> must_match;  // globs or paths the user named: must match something
};
Result<std::vector<DeviceFile>> expand_device_files(const DeviceSelection& selection);

// Checks a glob pattern for the mistakes glob(3) silently accepts: empty, unbalanced '['.
std::optional<std::string> glob_syntax_error(const std::string& pattern);

}  // namespace gpuclean::procfs
