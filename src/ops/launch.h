// Starting the workload of `gpuclean run`: resolve the program the way a shell does (so 126 and
// 127 mean what they mean there), then fork and exec it with its containment already in place.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace gpuclean::ops {

// The program `name` names: itself when it contains a '/', else the first match in the
// colon-separated `search_path` (empty entries mean the current directory, as in POSIX).
// Errors: ENOENT (nowhere: exit 127), EACCES (found, but not executable or a directory: 126).
Result<std::string> resolve_program(const std::string& name, const std::string& search_path);

struct LaunchOptions {
  // The child's cgroup: it is born there (clone3 CLONE_INTO_CGROUP, Linux >= 5.7) or, on older
  // kernels, moves itself in by writing cgroup.procs before exec. -1: stays in ours.
  int cgroup_dir_fd = -1;
  int cgroup_procs_fd = -1;
  bool new_session = false;  // setsid() in the child (the fallback mode's own session)
  std::optional<int> parent_death_signal;  // PR_SET_PDEATHSIG in the child
  // When set: the child's stdout and stderr go to this descriptor and its stdin is /dev/null
  // (`top` runs `gpuclean kill` and shows what it prints). -1: inherited.
  int output_fd = -1;
  // With output_fd: its stderr goes here instead (`top` reads kill's JSON plan from stdout and
  // its diagnostics apart). -1: to output_fd.
  int error_fd = -1;
};

struct Launched {
  Pid pid = 0;
  UniqueFd pidfd;  // opened before the child can be reaped, so it cannot name a recycled PID
};

// Forks (clone3, which also gives the pidfd; fork on kernels without it), prepares the child
// (signal mask and dispositions back to defaults, cgroup, session, death signal — all before
// any workload code runs) and execs `program` with
// `argv`. Returns once the exec has succeeded or failed: a failure in the child comes back as
// the Error (errno of the step that failed, with its name), and the child is reaped.
Result<Launched> launch(const std::string& program, const std::vector<std::string>& argv,
                        const LaunchOptions& options);

}  // namespace gpuclean::ops
