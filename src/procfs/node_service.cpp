#include "procfs/node_service.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <climits>

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

// Every directory from `path`'s parent up to "/" is root's and writable by root alone: nobody
// else can swap the file for another.
bool directories_safe(const std::string& path) {
  std::string dir = path;
  while (true) {
    const std::size_t slash = dir.rfind('/');
    if (slash == std::string::npos) return false;
    dir = slash == 0 ? "/" : dir.substr(0, slash);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
        writable_by_others(st.st_mode)) {
      return false;
    }
    if (dir == "/") return true;
  }
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

// The process's mount namespace is gpuclean's own, or that of PID 1 of the PID namespace gpuclean
// reads (the host's init, where the node's services run). A container's namespace is neither.
bool in_trusted_mount_namespace(int root_fd, Pid pid) {
  struct stat theirs {};
  if (::fstatat(root_fd, (std::to_string(pid) + "/ns/mnt").c_str(), &theirs, 0) != 0) {
    return false;
  }
  struct stat ours {};
  if (::stat("/proc/self/ns/mnt", &ours) == 0 && same_inode(theirs, ours)) return true;
  struct stat init {};
  return ::fstatat(root_fd, "1/ns/mnt", &init, 0) == 0 && same_inode(theirs, init);
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
  struct stat running {};  // the inode the process runs (the magic link, followed)
  if (::fstatat(proc.root_fd(), exe.c_str(), &running, 0) != 0) return std::nullopt;
  struct stat named {};  // what the path names here, in gpuclean's mount namespace
  if (::stat(facts.path.c_str(), &named) == 0) {
    facts.path_is_same_file = named.st_dev == running.st_dev && named.st_ino == running.st_ino;
  }
  std::array<char, PATH_MAX> resolved{};
  facts.path_is_canonical =
      ::realpath(facts.path.c_str(), resolved.data()) != nullptr && facts.path == resolved.data();
  facts.owner = running.st_uid;
  facts.mode = running.st_mode;
  facts.directories_safe = directories_safe(facts.path);
  auto service = trust_executable(facts);
  if (!service) return std::nullopt;
  ProcessFacts who;
  who.uid = process.uid;
  who.trusted_mount_namespace = in_trusted_mount_namespace(proc.root_fd(), process.pid);
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
