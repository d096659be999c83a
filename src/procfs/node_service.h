// Recognising the node's own GPU services (MPS, persistenced, DCGM, the fabric manager,
// monitoring tools) among the holders. A process is a service only on evidence a local user
// cannot forge: it runs in gpuclean's own mount namespace or the host's (PID 1's), as root or
// a system account (a user can run a trusted file with their own code in it: LD_PRELOAD,
// ptrace, a container's loader) or as an MPS server that the trusted daemon started for a
// user; and its executable (/proc/PID/exe) carries a service's name, lies in a system
// directory, is owned by root and writable by nobody else, and is the very file that path
// names — in gpuclean's own root, or, for a process in PID 1's mount namespace, in PID 1's
// root (a DaemonSet's gpuclean has the image's root, where the host's path names another file
// or none). A process merely *named* like a daemon, one run from a copy elsewhere, or one a
// user runs is an ordinary process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/model.h"
#include "procfs/proc_fs.h"

namespace gpuclean::procfs {

// The service an executable's file name belongs to ("nvidia-cuda-mps-control", …), or nullopt.
std::optional<NodeService> service_named(std::string_view file_name);

// Whether `directory` is one where the node's GPU services are installed (/usr/bin, /usr/sbin,
// /bin, /sbin, /usr/local/bin, /usr/local/sbin, /usr/local/nvidia/bin).
bool is_system_directory(std::string_view directory);

// What a walk of an absolute path beneath a root directory found (walk_beneath).
struct PathWalk {
  bool canonical = false;  // every component a plain name ("." ".." "" none), none a symlink
  // Every directory on the way, the root included: owned by root, writable by root alone.
  bool directories_safe = false;
  // The file the path names, when canonical: its device and inode.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> file;
};

// Walks absolute `path` beneath the directory `root_fd` one component at a time (O_PATH,
// O_NOFOLLOW): a symlink, ".", ".." or an empty component ends the walk, not canonical. So the
// path means the same beneath any root — an absolute symlink would otherwise be followed from
// gpuclean's root, not from `root_fd`'s. Mount points are crossed as the kernel crosses them
// for the root's mount namespace. Each name is resolved from the dentry cache when it can be
// (openat2 RESOLVE_CACHED) and stat'ed with AT_STATX_DONT_SYNC, so that a network or FUSE file
// system is asked only for what the kernel does not have; a name it must look up is looked up
// as usual (the caller bounds the walk).
PathWalk walk_beneath(int root_fd, std::string_view path);

// What the file system says about an executable, for trust_executable.
struct ExecutableFacts {
  std::string path;                // /proc/PID/exe's target (may end in " (deleted)")
  bool path_is_same_file = false;  // the path, walked in a trusted root, is the inode it runs
  bool path_is_canonical = false;  // no symlink or ".." in path
  Uid owner = 0;
  unsigned mode = 0;              // st_mode of the file
  bool directories_safe = false;  // every directory on the path: root's, not group/other-writable
};

// The service `facts` prove, or nullopt. Pure: the rules above.
std::optional<NodeService> trust_executable(const ExecutableFacts& facts);

// What makes a process running a trusted executable trusted itself: a file proves nothing
// about the code a user runs with it (LD_PRELOAD, ptrace, a container's loader, inherited
// descriptors across exec).
struct ProcessFacts {
  std::optional<Uid> uid;  // effective uid
  // In gpuclean's mount namespace or the host's (PID 1's): the path checks meant what they said.
  // The host's counts too because a sandboxed gpuclean (the systemd units' ProtectSystem=, a
  // DaemonSet) has a namespace of its own while the node's services run in the host's; their
  // path is then checked in PID 1's root too (recognise_service).
  bool trusted_mount_namespace = false;
  // For an MPS server running as a user (the daemon starts one per client user): its parent is
  // a trusted MPS control daemon running as root or a system account.
  bool parent_is_trusted_mps_control = false;
};

// Whether a process of `service`'s executable is the node's own: it runs as root or a system
// account in gpuclean's or the host's mount namespace — or it is an MPS server the trusted daemon
// started for a user. Pure.
bool trust_process(NodeService service, const ProcessFacts& facts);

struct RecognisedService {
  NodeService service;
  std::string executable;
};

// What looking for a service found.
struct ServiceLookup {
  std::optional<RecognisedService> service;
  // A stat of the executable or of its path did not answer within the ProcFs read deadline (a
  // network or FUSE file system whose server does not answer): the process was not recognised
  // and its reading is incomplete.
  bool unanswered = false;
};

// Reads what trust_executable and trust_process need for `process` (its exe link, the file,
// the directories, its uid, its mount namespace, for a user's MPS server its parent) and
// decides. The link's text and the process's owner come first, and nothing is stat'ed unless
// they could be a service's: the file name of one, in a system directory, run by root or a
// system account (or by a user, as an MPS server whose parent is the trusted daemon). A path
// elsewhere — a user's FUSE mount, whose server can stop answering — is decided without a
// stat. The stats that remain (statx with AT_STATX_DONT_SYNC, the walk) run on a worker under
// proc.read_deadline() (core/deadline_pool.h); a late one leaves the worker behind and yields
// no service, with `unanswered` set. The path is walked (walk_beneath) in gpuclean's root; for
// a process in PID 1's mount namespace, where that fails, in PID 1's root (<proc>/1/root) —
// never in the process's own root, which is whatever its maker mounted or chrooted into. No
// service for every ordinary process, for one whose exe cannot be read (another user's,
// without privilege) and for one whose PID was reused meanwhile (start time differs).
ServiceLookup look_up_service(const ProcFs& proc, const ProcessInfo& process);

// look_up_service's service alone.
std::optional<RecognisedService> recognise_service(const ProcFs& proc, const ProcessInfo& process);

}  // namespace gpuclean::procfs
