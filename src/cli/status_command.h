// `gpuclean` / `gpuclean status`, `gpuclean check` and `gpuclean explain PID`: the GPU
// diagnosis for people, for scripts, and for one process.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/common.h"
#include "core/model.h"
#include "diagnose/owner_match.h"
#include "output/explain_view.h"
#include "output/status_view.h"

namespace gpuclean::collect {
struct Gathered;
}

namespace gpuclean::cli {

struct StatusOptions {
  CommonOptions common;
  double max_used_mib = 1024;  // tolerated unattributed memory per GPU
  std::vector<std::string> allow_users;
  std::vector<Pid> ignore_pids;
  bool strict = false;  // --strict: warnings (a stray CUDA context) make the GPUs dirty too
  std::string against;  // check --against SNAPSHOT.json (cli/snapshot_command.h)
  // status/check --expect-gpus N: fewer GPUs than N, or no driver, is a problem
  // (diagnose/gpu_count.h).
  std::optional<unsigned> expect_gpus;
  // status/check/wait --job ID / --container ID: only those owners' holders and problems.
  diagnose::OwnerSelector owners;
  // status --db: the flight recorder's database, for orphans' parents (empty: its default,
  // read when readable).
  std::string history_db;
};

struct WaitOptions {
  StatusOptions status;
  std::string timeout;
  bool has_timeout = false;  // false: wait as long as it takes
};

struct ExplainOptions {
  CommonOptions common;
  Pid pid = 0;
  std::string db;  // the flight recorder's database (empty: its default)
};

// The diagnosis of gathered inputs as status/check report it, for commands that gather
// themselves (snapshot, check --against gather with GPU details). Usage problems are printed
// on io.err; then `usable` is false and exit_code says why.
struct StatusPrepared {
  StatusReport report;
  int exit_code = kExitClean;  // as run_status would return
  bool usable = false;
};
StatusPrepared prepare_status(const StatusOptions& options, collect::Gathered gathered,
                              const Io& io);

// 0 clean, 1 dirty, 2 usage, 3 when NVML is present but failing (the answer would be wrong:
// the verdict is then unknown, diagnose::status_verdict).
int run_status(const StatusOptions& options, const Io& io, bool is_terminal);
// Silent on stdout and 0 when clean; one "gpuclean: …" line per problem and 1 when not.
// Warnings (clean all the same) go to io.err, "gpuclean: warning: …".
int run_check(const StatusOptions& options, const Io& io);
// run_check on inputs already gathered (run gathers through its GPU sampler).
int run_check_on(const StatusOptions& options, collect::Gathered gathered, const Io& io);
// Polls until the selected GPUs are clean: 0 when they are, 1 when --timeout passes first (the
// remaining problems printed as `check` prints them), 2 for bad flags, 3 when NVML fails.
// On a terminal a progress line shows what is still holding.
int run_wait(const WaitOptions& options, const Io& io, bool is_terminal);
// What explain shows about `pid`: its holder in the report, else what /proc says of it, and
// its parent (`top`'s explain pane shows the same).
output::ExplainSubject read_explain_subject(const StatusReport& report, Pid pid,
                                            const CommonOptions& common);

// 0 when the PID is known (to /proc or NVML), 1 when nothing is known about it.
int run_explain(const ExplainOptions& options, const Io& io);

}  // namespace gpuclean::cli
