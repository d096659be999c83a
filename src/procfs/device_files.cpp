#include "procfs/device_files.h"

#include <glob.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "procfs/file_identity.h"

namespace gpuclean::procfs {
namespace {

// The NVIDIA driver's fixed character-device major; minor 255 is nvidiactl, 0..254 the GPUs.
constexpr unsigned kNvidiaMajor = 195;
constexpr unsigned kNvidiactlMinor = 255;

std::optional<unsigned> nvidia_minor_of(const std::optional<FileIdentity>& id) {
  if (!id || id->kind != FileIdentity::Kind::kCharDevice) return std::nullopt;
  if (id->rdev_major != kNvidiaMajor || id->rdev_minor >= kNvidiactlMinor) return std::nullopt;
  return id->rdev_minor;
}

// glob(3) matches; an empty list when nothing matches.
std::vector<std::string> glob_matches(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t result{};
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &result) == 0) {
    for (std::size_t i = 0; i < result.gl_pathc; ++i) out.emplace_back(result.gl_pathv[i]);
  }
  ::globfree(&result);
  return out;
}

std::string canonical(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) != nullptr) return resolved;
  return path;
}

}  // namespace

const std::vector<std::string>& default_nvidia_globs() {
  static const std::vector<std::string> globs = {"/dev/nvidia[0-9]*", "/dev/nvidiactl",
                                                 "/dev/nvidia-uvm*", "/dev/nvidia-caps/*"};
  return globs;
}

std::optional<std::string> glob_syntax_error(const std::string& pattern) {
  if (pattern.empty()) return "empty pattern";
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      ++i;
    } else if (!in_class && c == '[') {
      in_class = true;
      // "[]…]" and "[!]…]": a ']' right after the opening is a literal member.
      if (i + 1 < pattern.size() && (pattern[i + 1] == '!' || pattern[i + 1] == '^')) ++i;
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') ++i;
    } else if (in_class && c == ']') {
      in_class = false;
    }
  }
  if (in_class) return "unbalanced '['";
  return std::nullopt;
}

Result<std::vector<DeviceFile>> expand_device_files(const DeviceSelection& selection) {
  std::vector<std::string> paths;
  auto add_matches = [&paths](const std::string& pattern, bool must_match) -> Status {
    if (auto problem = glob_syntax_error(pattern)) {
      return Error{0, "device pattern '" + pattern + "': " + *problem};
    }
    auto matches = glob_matches(pattern);
    if (matches.empty() && must_match) {
      // A glob matches nothing; a plain path names no such file.
      const bool glob = pattern.find_first_of("*?[") != std::string::npos;
      return Error{0, "'" + pattern + (glob ? "': matched nothing" : "': no such file")};
    }
    for (auto& match : matches) paths.push_back(canonical(match));
    return Ok{};
  };
  for (const auto& pattern : selection.patterns) {
    if (auto status = add_matches(pattern, false); !status.ok()) return status.error();
  }
  for (const auto& pattern : selection.must_match) {
    if (auto status = add_matches(pattern, true); !status.ok()) return status.error();
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());

  std::vector<DeviceFile> files;
  files.reserve(paths.size());
  for (auto& path : paths) {
    // The identity is what a holder is matched by (procfs/holder_scan.h); the path is shown.
    auto identity = identity_of_path(path);
    // Two paths of one file (a second node, a hard link) are one file: the first path names it.
    const bool seen = identity && std::any_of(files.begin(), files.end(), [&](const DeviceFile& f) {
                        return f.identity && f.identity->same_file(*identity);
                      });
    if (seen) continue;
    files.push_back(DeviceFile{std::move(path), nvidia_minor_of(identity), identity});
  }
  return files;
}

std::vector<DeviceFile> mark_drm_nodes(std::vector<DeviceFile> files,
                                       const std::vector<DeviceFile>& nodes, bool add_missing) {
  for (const DeviceFile& node : nodes) {
    if (!node.identity) continue;
    auto same = std::find_if(files.begin(), files.end(), [&node](const DeviceFile& f) {
      return f.identity && f.identity->same_file(*node.identity);
    });
    if (same != files.end()) {
      same->drm = node.drm;
    } else if (add_missing) {
      files.push_back(node);
    }
  }
  std::sort(files.begin(), files.end(),
            [](const DeviceFile& a, const DeviceFile& b) { return a.path < b.path; });
  return files;
}

}  // namespace gpuclean::procfs
