// Recognising the node's own GPU services (MPS, persistenced, DCGM, the fabric manager,
// monitoring tools) among the holders. A process is a service only on evidence a local user
// cannot forge: its executable (/proc/PID/exe) carries a service's name, lies in a system
// directory, is owned by root and writable by nobody else, and is the very file that path
// names in gpuclean's own mount namespace; and the process runs as root or a system account
// in that namespace (a user can run a trusted file with their own code in it: LD_PRELOAD,
// ptrace, a container's loader), or is an MPS server that the trusted daemon started for a
// user. A process merely *named* like a daemon, one run from a copy elsewhere, or one a user
// runs is an ordinary process.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/model.h"
#include "procfs/proc_fs.h"

namespace gpuclean::procfs {

// The service an executable's file name belongs to ("nvidia-cuda-mps-control", …), or nullopt.
std::optional<NodeService> service_named(std::string_view file_name);

// Whether `directory` is one where the node's GPU services are installed (/usr/bin, /usr/sbin,
// /bin, /sbin, /usr/local/bin, /usr/local/sbin, /usr/local/nvidia/bin).
bool is_system_directory(std::string_view directory);

// What the file system says about an executable, for trust_executable.
struct ExecutableFacts {
  std::string path;                // /proc/PID/exe's target (may end in " (deleted)")
  bool path_is_same_file = false;  // stat(path) here is the inode the process runs
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
  // DaemonSet) has a namespace of its own while the node's services run in the host's.
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

// Reads what trust_executable and trust_process need for `process` (its exe link, the file,
// the directories, its uid, its mount namespace, for a user's MPS server its parent) and
// decides. nullopt for every ordinary process, for one whose exe cannot be read (another
// user's, without privilege) and for one whose PID was reused meanwhile (start time differs).
std::optional<RecognisedService> recognise_service(const ProcFs& proc, const ProcessInfo& process);

}  // namespace gpuclean::procfs
