// The benchmark guard: `gpuclean snapshot` (a JSON fingerprint of what a GPU benchmark result
// depends on), `gpuclean diff A.json [B.json]` (what changed, most result-relevant first) and
// `gpuclean check --against A.json` (check, plus one line per result-changing difference).
#pragma once

#include <string>

#include "cli/common.h"
#include "cli/status_command.h"
#include "procfs/host_facts.h"

namespace gpuclean::cli {

struct SnapshotOptions {
  CommonOptions common;
  std::string output;       // -o FILE (written atomically); empty: stdout
  procfs::HostRoots roots;  // hidden --sys-root, --kmsg (tests); /proc is common.proc_root
};

struct DiffCommandOptions {
  CommonOptions common;  // how "now" is gathered when B is not given
  std::string before;
  std::string after;           // empty: now
  double max_used_mib = 1024;  // used-memory growth per GPU that is not a difference
  procfs::HostRoots roots;
};

// 0 written, 2 usage, 3 NVML failing (the document is still written, with nvml.state
// "failed") or the file cannot be written.
int run_snapshot(const SnapshotOptions& options, const Io& io);
// 0 no difference that can change a result, 1 some, 2 an unreadable/malformed/future
// snapshot (the message names the file and what is wrong), 3 NVML failing for "now".
int run_diff(const DiffCommandOptions& options, const Io& io);
// `check --against FILE`: check's problem lines, then one line per result-changing
// difference; 0 when there are neither, 1 when there are, 2 and 3 as run_diff.
int run_check_against(const StatusOptions& options, const Io& io);

}  // namespace gpuclean::cli
