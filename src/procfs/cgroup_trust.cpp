#include "procfs/cgroup_trust.h"

#include <sys/stat.h>

#include <memory>

namespace gpuclean::procfs {
namespace {

const Cgroup2Mount* mount_of(const CgroupMounts& mounts, std::string_view controllers) {
  if (controllers.empty()) return mounts.v2 ? &*mounts.v2 : nullptr;
  for (const CgroupMounts::V1& v1 : mounts.v1) {
    bool all = true;
    std::size_t pos = 0;
    while (all && pos <= controllers.size()) {
      const std::size_t next = controllers.find(',', pos);
      const std::size_t end = next == std::string_view::npos ? controllers.size() : next;
      all = comma_list_has(v1.super_options, controllers.substr(pos, end - pos));
      pos = end + 1;
    }
    if (all) return &v1.mount;
  }
  return nullptr;
}

}  // namespace

CgroupMounts parse_cgroup_mounts(std::string_view mountinfo) {
  CgroupMounts mounts;
  std::size_t pos = 0;
  while (pos < mountinfo.size()) {
    const std::size_t next = mountinfo.find('\n', pos);
    const std::size_t end = next == std::string_view::npos ? mountinfo.size() : next;
    auto line = parse_mountinfo_line(mountinfo.substr(pos, end - pos));
    pos = end + 1;
    if (!line) continue;
    Cgroup2Mount mount{std::move(line->mount_point), std::move(line->root)};
    // A container may mount its own view over the host's: the one showing the whole
    // hierarchy ("/") is the one whose directories match the paths /proc gives here.
    if (line->fstype == "cgroup2" && (!mounts.v2 || mount.root == "/")) {
      mounts.v2 = std::move(mount);
    } else if (line->fstype == "cgroup") {
      mounts.v1.push_back({std::string(line->super_options), std::move(mount)});
    }
  }
  return mounts;
}

std::optional<std::string> root_named_prefix(const CgroupMounts& mounts,
                                             std::string_view controllers, std::string_view path,
                                             const DirectoryOwner& owner_of) {
  const Cgroup2Mount* mount = mount_of(mounts, controllers);
  // A mount of a subtree, or a path outside this namespace: the directories are not where
  // the path says.
  if (mount == nullptr || mount->root != "/" || path.empty() || path.front() != '/') {
    return std::nullopt;
  }
  std::size_t end = 0;
  while (end < path.size()) {
    const std::size_t next = path.find('/', end + 1);
    const std::size_t stop = next == std::string_view::npos ? path.size() : next;
    const std::string_view name = path.substr(end + 1, stop - end - 1);
    if (name == ".." || name == ".") return std::nullopt;
    if (!name.empty()) {
      const auto uid = owner_of(mount->mount_point + std::string(path.substr(0, stop)));
      if (!uid) return std::nullopt;  // gone, or not visible: cannot tell
      if (*uid != 0) return std::string(path.substr(0, stop));
    }
    end = stop;
  }
  return std::string(path);
}

TrustedPrefix trusted_prefix_here(CgroupMounts mounts) {
  auto shared = std::make_shared<const CgroupMounts>(std::move(mounts));
  return [shared](std::string_view controllers, std::string_view path) {
    return root_named_prefix(*shared, controllers, path,
                             [](const std::string& directory) -> std::optional<uid_t> {
                               struct stat st {};
                               if (::stat(directory.c_str(), &st) != 0) return std::nullopt;
                               return st.st_uid;
                             });
  };
}

}  // namespace gpuclean::procfs
