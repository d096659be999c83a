#include "diagnose/classify.h"

#include <algorithm>
#include <string_view>

namespace gpuclean::diagnose {
namespace {

bool is_dead_state(char state) {
  return state == 'Z' || state == 'X' || state == 'x';
}

}  // namespace

bool is_system_service(const ProcessInfo& process) {
  // systemd puts a system service's processes in /system.slice/NAME.service (or a cgroup
  // below it). A user's own services live under user.slice and prove nothing — and neither
  // does the path for a user's process: cron, atd, an sshd without pam_systemd, slurmd under
  // proctrack/linuxproc leave users' jobs in their own service's cgroup. So the process must
  // also run as root or a system account.
  if (!process.cgroup || !process.uid || *process.uid >= kFirstUserUid) return false;
  std::string_view path = *process.cgroup;
  // Read from a cgroup namespace (gpuclean in a Kubernetes pod: its DaemonSet), a group
  // outside the namespace's root shows as "/../../system.slice/X.service": the kernel writes
  // the path relative to the reader's root. Skip those components, as procfs/owner.cpp does.
  while (path.rfind("/../", 0) == 0) path.remove_prefix(3);
  constexpr std::string_view kSlice = "/system.slice/";
  if (path.rfind(kSlice, 0) != 0) return false;
  const std::size_t end = path.find('/', kSlice.size());
  const std::string_view unit = path.substr(
      kSlice.size(), end == std::string_view::npos ? std::string_view::npos : end - kSlice.size());
  constexpr std::string_view kSuffix = ".service";
  return unit.size() > kSuffix.size() && unit.substr(unit.size() - kSuffix.size()) == kSuffix;
}

bool is_stuck(const ProcessInfo& process) {
  // A locked memory map (a read of its command line did not answer) means a thread holds the
  // mmap lock and waits: stuck even when no thread shows D at this instant.
  return process.memory_map_locked || std::any_of(process.threads.begin(), process.threads.end(),
                                                  [](const ThreadInfo& t) { return t.stays_in_d; });
}

HolderClass lifecycle_class(const ProcessInfo& process) {
  if (is_dead_state(process.state)) {
    return has_live_thread(process) ? HolderClass::kZombieLeader : HolderClass::kZombie;
  }
  // PID 1 adopts the children of a parent that died. (A child subreaper adopts them too, but
  // /proc does not say which processes are subreapers.)
  // A system service's main process has PID 1 as its parent by design: not an orphan.
  if (process.ppid == 1 && !is_system_service(process)) return HolderClass::kOrphan;
  return HolderClass::kActive;
}

HolderClass classify_from_proc(const ProcessInfo& process) {
  // Nothing left to freeze or to be stuck: only the exit status waits for the parent.
  if (!has_live_thread(process)) return lifecycle_class(process);
  // Frozen first: a v1 freezer's threads sit in D (__refrigerator), and the fix is a thaw,
  // never a reset (issue 32).
  if (process.frozen) return HolderClass::kFrozen;
  if (is_stuck(process)) return HolderClass::kStuck;
  return lifecycle_class(process);
}

}  // namespace gpuclean::diagnose
