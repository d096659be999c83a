#include "procfs/node_service.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <climits>

#include "core/unique_fd.h"
#include "procfs/parse.h"

namespace gpuclean::procfs {
namespace {

struct NamedService {
  std::string_view file_name;
  NodeService service;
};

// The executables NVIDIA's packages (and DCGM's) install. A monitoring tool in a container
// (dcgm-exporter) runs from the container's file system, in another mount namespace: it is
// not trusted, and is an ordinary holder (active while its parent lives).
constexpr std::array kServices{
    NamedService{"nvidia-cuda-mps-control", NodeService::kMpsControl},
    NamedService{"nvidia-cuda-mps-server", NodeService::kMpsServer},
    NamedService{"nvidia-persistenced", NodeService::kPersistenced},
    NamedService{"nv-hostengine", NodeService::kDcgm},
    NamedService{"nv-fabricmanager", NodeService::kFabricManager},
    NamedService{"nvidia-smi", NodeService::kMonitorTool},
    NamedService{"dcgmi", NodeService::kMonitorTool},
    NamedService{"dcgm-exporter", NodeService::kMonitorTool},
    NamedService{"gpuclean", NodeService::kMonitorTool},
};

// /usr/local/nvidia/bin: where GPU container images and Kubernetes nodes (GKE, the GPU
// machine of docs/gpu-tests.md) put the driver's programs.
constexpr std::array<std::string_view, 7> kSystemDirectories{"/usr/bin",
                                                             "/usr/sbin",
                                                             "/bin",
                                                             "/sbin",
                                                             "/usr/local/bin",
                                                             "/usr/local/sbin",
                                                             "/usr/local/nvidia/bin"};

bool writable_by_others(unsigned mode) {
  return (mode & (S_IWGRP | S_IWOTH)) != 0;
}

// Root's, and writable by root alone: nobody else can swap what is in it.
bool safe_directory(const struct stat& st) {
  return S_ISDIR(st.st_mode) && st.st_uid == 0 && !writable_by_others(st.st_mode);
}

std::optional<std::uint64_t> start_ticks_now(int root_fd, Pid pid) {
  std::string text;
  if (!read_file_at(root_fd, (std::to_string(pid) + "/stat").c_str(), text, 4096)) {
    return std::nullopt;
  }
  auto stat = parse_stat(text);
  if (!stat.ok()) return std::nullopt;
  return stat->start_ticks;
}

}  // namespace

PathWalk walk_beneath(int root_fd, std::string_view path) {
  PathWalk walk;
  if (path.empty() || path.front() != '/') return walk;
  struct stat st {};
  if (::fstat(root_fd, &st) != 0) return walk;
  bool safe = safe_directory(st);
  // dup: the loop closes what it walked past, the caller's descriptor stays its own.
  UniqueFd at(::fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  if (!at) return walk;
  std::string_view rest = path.substr(1);
  while (true) {
    const std::size_t slash = rest.find('/');
    const std::string name(rest.substr(0, slash));
    if (name.empty() || name == "." || name == "..") return walk;
    // O_PATH opens what a name is without reading it; O_NOFOLLOW stops at a symlink (opened
    // as the link itself, S_ISLNK), which the walk refuses: no path the link could lead to.
    UniqueFd next(::openat(at.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next || ::fstat(next.get(), &st) != 0 || S_ISLNK(st.st_mode)) return walk;
    if (slash == std::string_view::npos) {
      walk.canonical = true;
      walk.directories_safe = safe;
      walk.file = std::make_pair(static_cast<std::uint64_t>(st.st_dev),
                                 static_cast<std::uint64_t>(st.st_ino));
      return walk;
    }
    if (!S_ISDIR(st.st_mode)) return walk;
    safe = safe && safe_directory(st);
    at = std::move(next);
    rest = rest.substr(slash + 1);
  }
}

std::optional<NodeService> service_named(std::string_view file_name) {
  for (const NamedService& s : kServices) {
    if (s.file_name == file_name) return s.service;
  }
  return std::nullopt;
}

bool is_system_directory(std::string_view directory) {
  for (std::string_view d : kSystemDirectories) {
    if (d == directory) return true;
  }
  return false;
}

std::optional<NodeService> trust_executable(const ExecutableFacts& facts) {
  const std::size_t slash = facts.path.rfind('/');
  if (facts.path.empty() || facts.path.front() != '/' || slash == std::string::npos) {
    return std::nullopt;
  }
  const std::string_view path = facts.path;
  auto service = service_named(path.substr(slash + 1));
  if (!service) return std::nullopt;  // also "name (deleted)": a replaced binary is not trusted
  if (!is_system_directory(path.substr(0, slash))) return std::nullopt;
  if (!facts.path_is_canonical || !facts.path_is_same_file || !facts.directories_safe) {
    return std::nullopt;
  }
  if (facts.owner != 0 || !S_ISREG(facts.mode) || writable_by_others(facts.mode)) {
    return std::nullopt;
  }
  return service;
}

bool trust_process(NodeService service, const ProcessFacts& facts) {
  if (!facts.trusted_mount_namespace || !facts.uid) return false;
  if (*facts.uid < kFirstUserUid) return true;
  return service == NodeService::kMpsServer && facts.parent_is_trusted_mps_control;
}

namespace {

bool same_inode(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Which trusted mount namespace the process runs in: gpuclean's own, or that of PID 1 of the
// PID namespace gpuclean reads (the host's init, where the node's services run). A
// container's namespace is neither.
enum class MountNamespace { kOurs, kInit, kOther };

MountNamespace mount_namespace_of(int root_fd, Pid pid) {
  struct stat theirs {};
  if (::fstatat(root_fd, (std::to_string(pid) + "/ns/mnt").c_str(), &theirs, 0) != 0) {
    return MountNamespace::kOther;
  }
  struct stat ours {};
  if (::stat("/proc/self/ns/mnt", &ours) == 0 && same_inode(theirs, ours)) {
    return MountNamespace::kOurs;
  }
  struct stat init {};
  if (::fstatat(root_fd, "1/ns/mnt", &init, 0) == 0 && same_inode(theirs, init)) {
    return MountNamespace::kInit;
  }
  return MountNamespace::kOther;
}

// Fills in what walking facts->path beneath `root` (a directory fd) says about the file `running`.
void walk_facts(int root, const struct stat& running, ExecutableFacts& facts) {
  const PathWalk walk = walk_beneath(root, facts.path);
  facts.path_is_canonical = walk.canonical;
  facts.directories_safe = walk.directories_safe;
  facts.path_is_same_file = walk.file &&
                            walk.file->first == static_cast<std::uint64_t>(running.st_dev) &&
                            walk.file->second == static_cast<std::uint64_t>(running.st_ino);
}

}  // namespace

std::optional<RecognisedService> recognise_service(const ProcFs& proc, const ProcessInfo& process) {
  if (process.kernel_thread) return std::nullopt;
  const std::string exe = std::to_string(process.pid) + "/exe";
  std::array<char, PATH_MAX> target{};
  const ssize_t n = ::readlinkat(proc.root_fd(), exe.c_str(), target.data(), target.size() - 1);
  if (n <= 0) return std::nullopt;
  ExecutableFacts facts;
  facts.path.assign(target.data(), static_cast<std::size_t>(n));
  // Cheap test first: most holders are python or a server binary, never a service's name.
  const std::size_t slash = facts.path.rfind('/');
  if (slash == std::string::npos || !service_named(facts.path.substr(slash + 1))) {
    return std::nullopt;
  }
  ProcessFacts who;
  who.uid = process.uid;
  const MountNamespace ns = mount_namespace_of(proc.root_fd(), process.pid);
  who.trusted_mount_namespace = ns != MountNamespace::kOther;
  if (!who.trusted_mount_namespace) return std::nullopt;  // trust_process would refuse it
  struct stat running {};  // the inode the process runs (the magic link, followed)
  if (::fstatat(proc.root_fd(), exe.c_str(), &running, 0) != 0) return std::nullopt;
  facts.owner = running.st_uid;
  facts.mode = running.st_mode;
  // The path, as the kernel writes the link, is relative to gpuclean's root when the file is
  // reachable from it, else to the root of the process's mount namespace. First gpuclean's
  // root: a sandbox (ProtectSystem=, a bind-mounted tool) shows the host's files there.
  UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root) walk_facts(root.get(), running, facts);
  auto service = trust_executable(facts);
  if (!service && ns == MountNamespace::kInit) {
    // A DaemonSet's gpuclean: its root is the image's, where the host's path names another
    // file or none. PID 1's root is the host's: the tree its services are installed in.
    UniqueFd init_root(::openat(proc.root_fd(), "1/root", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (init_root) {
      walk_facts(init_root.get(), running, facts);
      service = trust_executable(facts);
    }
  }
  if (!service) return std::nullopt;
  if (*service == NodeService::kMpsServer && process.uid && *process.uid >= kFirstUserUid &&
      process.ppid > 1) {
    auto parent = proc.read_process(process.ppid);
    if (parent.ok()) {
      auto daemon = recognise_service(proc, *parent);
      who.parent_is_trusted_mps_control = daemon && daemon->service == NodeService::kMpsControl;
    }
  }
  if (!trust_process(*service, who)) return std::nullopt;
  // The exe link was read after the scan: the PID must still be the process the scan saw.
  if (start_ticks_now(proc.root_fd(), process.pid) != process.start_ticks) return std::nullopt;
  return RecognisedService{*service, facts.path};
}

}  // namespace gpuclean::procfs
