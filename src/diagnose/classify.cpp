#include "diagnose/classify.h"

#include <algorithm>

namespace gpuclean::diagnose {
namespace {

bool is_dead_state(char state) {
  return state == 'Z' || state == 'X' || state == 'x';
}

}  // namespace

HolderClass classify_from_proc(const ProcessInfo& process) {
  const bool any_d =
      process.state == 'D' || std::any_of(process.threads.begin(), process.threads.end(),
                                          [](const ThreadInfo& t) { return t.state == 'D'; });
  // A locked memory map (a read of its command line did not answer) means a thread holds the
  // mmap lock and waits: stuck even when no thread shows D at this instant.
  if (any_d || process.memory_map_locked) return HolderClass::kStuck;
  if (is_dead_state(process.state)) {
    return has_live_thread(process) ? HolderClass::kZombieLeader : HolderClass::kZombie;
  }
  // PID 1 adopts the children of a parent that died. (A child subreaper adopts them too, but
  // /proc does not say which processes are subreapers.)
  if (process.ppid == 1) return HolderClass::kOrphan;
  return HolderClass::kActive;
}

}  // namespace gpuclean::diagnose
