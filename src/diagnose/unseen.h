// What a /proc scan could not read, and what that does to a verdict (docs/reference.md, "Never
// a verdict beyond what was seen"). Pure.
#pragma once

#include <string>

#include "core/model.h"

namespace gpuclean::diagnose {

struct Unseen {
  // The verdict must be `unknown` (exit 3): what was not read could hold the device.
  bool decides = false;
  // One line for the user ("gpuclean: " not included); empty when everything was read.
  std::string message;
};

// The rule, when the verdict rests on /proc (`memory_from_nvml` false: no NVML, --no-nvml, or
// a command that never asks it):
// - a process read only in part because of what it is or does (ScanStats::incomplete: maps or
//   descriptors past the read deadline) decides it, as root too;
// - run without CAP_SYS_PTRACE (a user, or a root that lacks it), a process that could not be
//   read (another user's, or one of ours that is not dumpable) decides it: "run as root", or
//   for such a root "add CAP_SYS_PTRACE";
// - run with it, a refusal (a supervisor more privileged than root's namespace, PID 1 on a
//   sandboxed host) is said and decides nothing.
// With NVML answering, memory is judged from NVML: the unread processes are only said.
Unseen unseen_processes(const ScanStats& stats, bool memory_from_nvml);

}  // namespace gpuclean::diagnose
