#include "ops/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <map>
#include <system_error>
#include <vector>

#include "core/escape.h"
#include "procfs/parse.h"
#include "procfs/proc_fs.h"

namespace gpuclean::ops {

Result<CgroupLocation> own_cgroup(const std::string& proc_root) {
  auto mountinfo = procfs::read_file_at(AT_FDCWD, proc_root + "/self/mountinfo");
  if (!mountinfo.ok()) return mountinfo.error();
  auto mount = procfs::parse_cgroup2_mount(*mountinfo);
  if (!mount) return Error{ENOENT, "no cgroup v2 hierarchy is mounted (cgroup v1 only)"};
  auto cgroup = procfs::read_file_at(AT_FDCWD, proc_root + "/self/cgroup");
  if (!cgroup.ok()) return cgroup.error();
  auto path = procfs::parse_cgroup_v2(*cgroup);
  if (!path) return Error{ENOENT, proc_root + "/self/cgroup has no cgroup v2 (\"0::\") line"};
  // A mount of a subtree shows that subtree at its top; strip it from our path.
  std::string relative = *path;
  if (mount->root != "/" && relative.rfind(mount->root, 0) == 0) {
    relative = relative.substr(mount->root.size());
  }
  if (relative == "/") relative.clear();
  return CgroupLocation{mount->mount_point + relative, *path};
}

Status remove_empty_group(const std::string& directory) {
  std::vector<std::string> groups = {directory};
  std::error_code error;
  // Bounded by the groups there are; a group made meanwhile makes its parent's rmdir fail.
  for (std::filesystem::recursive_directory_iterator it(directory, error), end; !error && it != end;
       it.increment(error)) {
    if (it->is_directory(error) && !it->is_symlink(error)) groups.push_back(it->path().string());
  }
  if (error && error != std::errc::no_such_file_or_directory) {
    return Error{error.value(), "look into cgroup " + directory + ": " + error.message()};
  }
  // Children come after their parents in a walk from the top: remove from the end.
  for (auto group = groups.rbegin(); group != groups.rend(); ++group) {
    if (::rmdir(group->c_str()) != 0 && errno != ENOENT) {
      return errno_error("remove cgroup " + *group);
    }
  }
  return Ok{};
}

std::vector<std::string> remove_run_groups(const std::string& proc_root,
                                           const std::vector<ProcessInfo>& processes) {
  std::map<std::string, std::string> groups;  // path -> gpuclean run's PID
  for (const ProcessInfo& p : processes) {
    if (p.owner && p.owner->kind == Owner::Kind::kRun) groups[p.owner->full_id] = p.owner->id;
  }
  std::vector<std::string> lines;
  for (const auto& [path, run] : groups) {
    const std::string whose = "gpuclean run " + run + "'s group " + escape_terminal(path);
    auto location = find_cgroup(proc_root, path);
    Status removed =
        location.ok() ? remove_empty_group(location->directory) : Status(location.error());
    lines.push_back(removed.ok()
                        ? "removed " + whose + ", empty now"
                        : "left " + whose + ": " + escape_terminal(removed.error().message()));
  }
  return lines;
}

Result<CgroupLocation> find_cgroup(const std::string& proc_root, const std::string& path) {
  auto mountinfo = procfs::read_file_at(AT_FDCWD, proc_root + "/self/mountinfo");
  if (!mountinfo.ok()) return mountinfo.error();
  auto mount = procfs::parse_cgroup2_mount(*mountinfo);
  if (!mount) return Error{ENOENT, "no cgroup v2 hierarchy is mounted (cgroup v1 only)"};
  if (path.empty() || path[0] != '/' || path.find("/../") != std::string::npos ||
      path.ends_with("/..")) {
    return Error{EINVAL, "'" + path + "' is not a cgroup path (like /slurm/job_7)"};
  }
  std::string relative = path;
  if (mount->root != "/") {
    if (relative.rfind(mount->root, 0) != 0) {
      return Error{ENOENT, "cgroup " + path + " is outside the mounted hierarchy"};
    }
    relative = relative.substr(mount->root.size());
  }
  while (relative.size() > 1 && relative.back() == '/') relative.pop_back();
  if (relative == "/") relative.clear();
  const std::string directory = mount->mount_point + relative;
  struct stat info {};
  if (::stat(directory.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return Error{ENOENT, "no cgroup " + path + " (" + directory + " does not exist)"};
  }
  return CgroupLocation{directory, path};
}

Result<CgroupGroup> CgroupGroup::create(const CgroupLocation& parent, const std::string& name) {
  CgroupLocation location{parent.directory + "/" + name,
                          (parent.path == "/" ? "" : parent.path) + "/" + name};
  if (::mkdir(location.directory.c_str(), 0755) != 0) {
    return errno_error("create cgroup " + location.directory);
  }
  UniqueFd dir(::open(location.directory.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC));
  // A cgroup v2 directory is born with its interface files; a plain directory is not one.
  UniqueFd procs(dir ? ::openat(dir.get(), "cgroup.procs", O_WRONLY | O_CLOEXEC) : -1);
  if (!dir || !procs) {
    const int saved = errno;
    ::rmdir(location.directory.c_str());
    return Error{saved, parent.directory + " is not a writable cgroup v2 directory (cgroup.procs)"};
  }
  return CgroupGroup(std::move(location), std::move(dir), std::move(procs));
}

CgroupGroup::~CgroupGroup() {
  if (dir_ && !removed_) (void)remove();
}

Result<std::vector<Pid>> CgroupGroup::members() const {
  auto text = procfs::read_file_at(dir_.get(), "cgroup.procs");
  if (!text.ok())
    return Error{text.error().errnum, "read " + location_.directory + "/cgroup.procs"};
  std::vector<Pid> pids;
  const char* at = text->data();
  const char* end = text->data() + text->size();
  while (at < end) {
    Pid pid = 0;
    auto [next, ec] = std::from_chars(at, end, pid);
    if (ec == std::errc() && pid > 0) pids.push_back(pid);
    at = next + (next < end ? 1 : 0);  // skip the newline (or a byte that is not a digit)
  }
  return pids;
}

Result<bool> CgroupGroup::populated() const {
  auto text = procfs::read_file_at(dir_.get(), "cgroup.events");
  if (!text.ok())
    return Error{text.error().errnum, "read " + location_.directory + "/cgroup.events"};
  return text->find("populated 1") != std::string::npos;
}

Status CgroupGroup::kill_all() const {
  const int fd = ::openat(dir_.get(), "cgroup.kill", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno_error("open " + location_.directory + "/cgroup.kill");
  const bool written = ::write(fd, "1", 1) == 1;
  const int saved = errno;
  ::close(fd);
  if (!written) return Error{saved, "write " + location_.directory + "/cgroup.kill"};
  return Ok{};
}

Status CgroupGroup::remove() {
  if (::rmdir(location_.directory.c_str()) != 0 && errno != ENOENT) {
    return errno_error("remove cgroup " + location_.directory);
  }
  removed_ = true;
  return Ok{};
}

}  // namespace gpuclean::ops
