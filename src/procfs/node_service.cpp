#include "procfs/node_service.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <memory>
#include <vector>

#include "core/deadline_pool.h"
#include "core/left_behind.h"
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
bool root_only_directory(const struct stat& st) {
  return S_ISDIR(st.st_mode) && st.st_uid == 0 && !writable_by_others(st.st_mode);
}

// fstat from what the kernel has cached (AT_STATX_DONT_SYNC: a network or FUSE file system
// does not ask its server), with the fields the walk uses.
bool stat_cached(int fd, struct stat& st) {
  struct statx sx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
              STATX_TYPE | STATX_MODE | STATX_UID | STATX_INO, &sx) != 0) {
    return false;
  }
  st = {};
  st.st_mode = sx.stx_mode;
  st.st_uid = sx.stx_uid;
  st.st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  st.st_ino = sx.stx_ino;
  return true;
}

// openat(O_PATH | O_NOFOLLOW) of one name in `dir`, from the dentry cache when it can be
// (RESOLVE_CACHED: no request to a network or FUSE server, whose answer cannot be abandoned
// once it has read the request — not even by SIGKILL, so the process could not exit). A
// running executable pins its own dentry and its directories', so on a local file system this
// always answers; a name the file system wants to revalidate (NFS, FUSE) is looked up as usual,
// under the caller's deadline (recognise_service).
UniqueFd open_component(int dir, const char* name) {
  open_how how{};
  how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_CACHED;
  const long fd = ::syscall(SYS_openat2, dir, name, &how, sizeof(how));
  if (fd >= 0) return UniqueFd(static_cast<int>(fd));
  // EAGAIN: not cached; ENOSYS, EINVAL: a kernel before 5.12 (RESOLVE_CACHED) or 5.6 (openat2).
  if (errno != EAGAIN && errno != ENOSYS && errno != EINVAL) return UniqueFd(-1);
  return UniqueFd(::openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
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
  if (!stat_cached(root_fd, st)) return walk;
  bool safe = root_only_directory(st);
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
    UniqueFd next = open_component(at.get(), name.c_str());
    if (!next || !stat_cached(next.get(), st) || S_ISLNK(st.st_mode)) return walk;
    if (slash == std::string_view::npos) {
      walk.canonical = true;
      walk.directories_safe = safe;
      walk.file = std::make_pair(static_cast<std::uint64_t>(st.st_dev),
                                 static_cast<std::uint64_t>(st.st_ino));
      return walk;
    }
    if (!S_ISDIR(st.st_mode)) return walk;
    safe = safe && root_only_directory(st);
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

// Fills in what walking facts->path beneath `root` (a directory fd) says about the file
// (dev, ino) the process runs.
void walk_facts(int root, std::pair<std::uint64_t, std::uint64_t> running, ExecutableFacts& facts) {
  const PathWalk walk = walk_beneath(root, facts.path);
  facts.path_is_canonical = walk.canonical;
  facts.directories_safe = walk.directories_safe;
  facts.path_is_same_file = walk.file == running;
}

// The exe link's text and its owner, before anything is stat'ed: the service its file name
// and directory may belong to. A path outside the system directories is never a service, and
// is never stat'ed (issue 48 item 4: a user's FUSE file system that stops answering would hold
// the stat, and gpuclean with it, in D, for as long as the user likes). A process running as a
// user can be a service only as an MPS server the daemon started.
std::optional<NodeService> possible_service(const std::string& path, std::optional<Uid> uid) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos || !is_system_directory(path.substr(0, slash))) {
    return std::nullopt;
  }
  auto service = service_named(std::string_view(path).substr(slash + 1));
  if (!service || !uid) return std::nullopt;
  if (*uid >= kFirstUserUid && *service != NodeService::kMpsServer) return std::nullopt;
  return service;
}

// The stats of the executable, done on a worker (deadline_pool.h) that may be left behind:
// it owns everything it touches.
struct ExecutableLook {
  ProcFs proc;  // shares the open /proc with the caller's handle
  std::string exe;
  MountNamespace ns = MountNamespace::kOther;
  ExecutableFacts facts;
  std::optional<NodeService> service;
};

void look_at_executable(ExecutableLook& look) {
  // The inode the process runs (the magic link, followed). AT_STATX_DONT_SYNC: a network or
  // FUSE file system answers from what the kernel has cached instead of asking its server.
  struct statx running {};
  if (::statx(look.proc.root_fd(), look.exe.c_str(), AT_STATX_DONT_SYNC,
              STATX_TYPE | STATX_MODE | STATX_UID | STATX_INO, &running) != 0) {
    return;
  }
  ExecutableFacts& facts = look.facts;
  facts.owner = running.stx_uid;
  facts.mode = running.stx_mode;
  const std::pair<std::uint64_t, std::uint64_t> inode{
      makedev(running.stx_dev_major, running.stx_dev_minor), running.stx_ino};
  // The path, as the kernel writes the link, is relative to gpuclean's root when the file is
  // reachable from it, else to the root of the process's mount namespace. First gpuclean's
  // root: a sandbox (ProtectSystem=, a bind-mounted tool) shows the host's files there.
  UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root) walk_facts(root.get(), inode, facts);
  look.service = trust_executable(facts);
  if (!look.service && look.ns == MountNamespace::kInit) {
    // A DaemonSet's gpuclean: its root is the image's, where the host's path names another
    // file or none. PID 1's root is the host's: the tree its services are installed in.
    UniqueFd init_root(::openat(look.proc.root_fd(), "1/root", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (init_root) {
      walk_facts(init_root.get(), inode, facts);
      look.service = trust_executable(facts);
    }
  }
}

// trust_executable's verdict on `path`, the exe link of `pid`, with every stat bounded by the
// read deadline: one that does not answer in time (a server that stopped answering) leaves its
// worker behind and is not recognised.
// A look left blocked is not started again for the same process until it returns (issue 48
// item 5's rule: one thread left behind per stuck file system, not one per look).
ServiceLookup bounded_executable_look(const ProcFs& proc, const ProcessInfo& process,
                                      const std::string& path, MountNamespace ns) {
  static LeftBehind<std::pair<Pid, std::uint64_t>> blocked_looks;
  const std::pair<Pid, std::uint64_t> key{process.pid, process.start_ticks};
  ServiceLookup result;
  if (blocked_looks.still_running(key)) {
    result.unanswered = true;
    return result;
  }
  auto look = std::make_shared<ExecutableLook>(
      ExecutableLook{proc, std::to_string(process.pid) + "/exe", ns, {}, std::nullopt});
  look->facts.path = path;
  auto returned = LeftBehind<std::pair<Pid, std::uint64_t>>::new_flag();
  const std::vector<std::size_t> overdue = run_with_deadline(
      1, {.threads = 1, .deadline = proc.read_deadline()}, [look, returned](std::size_t /*item*/) {
        look_at_executable(*look);
        returned->store(true);
      });
  if (!overdue.empty()) {
    blocked_looks.remember(key, returned);
    result.unanswered = true;
    return result;
  }
  if (look->service) result.service = RecognisedService{*look->service, path};
  return result;
}

bool parent_is_trusted_mps_control(const ProcFs& proc, const ProcessInfo& process,
                                   bool& unanswered) {
  if (process.ppid <= 1) return false;
  auto parent = proc.read_process(process.ppid);
  if (!parent.ok()) return false;
  const ServiceLookup daemon = look_up_service(proc, *parent);
  unanswered = unanswered || daemon.unanswered;
  return daemon.service && daemon.service->service == NodeService::kMpsControl;
}

}  // namespace

ServiceLookup look_up_service(const ProcFs& proc, const ProcessInfo& process) {
  ServiceLookup none;
  if (process.kernel_thread) return none;
  const std::string exe = std::to_string(process.pid) + "/exe";
  std::array<char, PATH_MAX> target{};
  // The link's text is the kernel's (d_path): reading it touches no file system.
  const ssize_t n = ::readlinkat(proc.root_fd(), exe.c_str(), target.data(), target.size() - 1);
  if (n <= 0) return none;
  const std::string path(target.data(), static_cast<std::size_t>(n));
  // Cheap tests first: most holders are python or a server binary, never a service's name.
  const std::optional<NodeService> named = possible_service(path, process.uid);
  if (!named) return none;
  ProcessFacts who;
  who.uid = process.uid;
  const MountNamespace ns = mount_namespace_of(proc.root_fd(), process.pid);
  who.trusted_mount_namespace = ns != MountNamespace::kOther;
  if (!who.trusted_mount_namespace) return none;  // trust_process would refuse it
  // A user's MPS server: its parent decides before its own executable is looked at.
  if (*named == NodeService::kMpsServer && *process.uid >= kFirstUserUid) {
    who.parent_is_trusted_mps_control =
        parent_is_trusted_mps_control(proc, process, none.unanswered);
    if (!who.parent_is_trusted_mps_control) return none;
  }
  ServiceLookup found = bounded_executable_look(proc, process, path, ns);
  found.unanswered = found.unanswered || none.unanswered;
  if (!found.service || !trust_process(found.service->service, who)) {
    found.service.reset();
    return found;
  }
  // The exe link was read after the scan: the PID must still be the process the scan saw.
  if (start_ticks_now(proc.root_fd(), process.pid) != process.start_ticks) found.service.reset();
  return found;
}

std::optional<RecognisedService> recognise_service(const ProcFs& proc, const ProcessInfo& process) {
  return look_up_service(proc, process).service;
}

}  // namespace gpuclean::procfs
