// The processes of one `gpuclean run`, from the launch to an empty group: where they are
// contained, the launch, the wait, the teardown and what the record says about them. It knows
// nothing of GPUs: the GPU side (collect/run_gpu_watch.h) comes in through SuperviseHooks
// and reads run_pids() and workload_start_ticks().
//
// Whatever happens between the launch and the teardown — an exception from a hook, an early
// return — nothing of the run is left running: a guard armed by launch() SIGKILLs the whole
// run (cgroup.kill, the workload's pidfd, then SIGKILL rounds over the members, bounded) when
// the session is destroyed before tear_down() has run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/run_record.h"
#include "ops/cgroup.h"
#include "ops/launch.h"
#include "ops/supervisor.h"
#include "ops/teardown.h"
#include "procfs/proc_fs.h"

namespace gpuclean::ops {

// The process-wide settings a supervisor needs, before anything is written to stderr: SIGPIPE
// ignored (a `… 2>&1 | tee log` whose tee died must not kill gpuclean mid-teardown; the
// workload gets the default back, launch.cpp) and the soft RLIMIT_NOFILE raised to the hard
// one (one pidfd per leftover at teardown).
void prepare_supervisor_process();

struct RunSessionOptions {
  bool no_cgroup = false;     // force the subreaper fallback
  std::string cgroup_parent;  // make the group under this directory; empty: beside gpuclean
  // Problems for the user, one line each without a prefix (a group that is still populated
  // and left in place, what the guard did). May be empty.
  std::function<void(const std::string& line)> say;
  // How long the guard waits for the run's processes to die after its SIGKILLs, per round.
  Duration guard_wait = std::chrono::seconds(2);
};

class RunSession {
 public:
  // Blocks the supervised signals and makes this process a child subreaper (Supervisor), opens
  // /proc, and makes the run's cgroup v2 group — or falls back to a child subreaper with the
  // workload in its own session (fallback_reason() says why). Records mode, mode_note, cgroup
  // in `log`, which must outlive the session. Errors: the supervisor or /proc.
  static Result<std::unique_ptr<RunSession>> create(const RunSessionOptions& options, RunLog& log);
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;
  // The guard: launched and not torn down → SIGKILL everything of the run, reap, bounded.
  ~RunSession();

  [[nodiscard]] Containment& containment() { return *containment_; }
  // The run's group; nullptr in subreaper mode.
  [[nodiscard]] const CgroupGroup* group() const { return group_; }
  // Subreaper mode: why there is no cgroup (--no-cgroup, mkdir's error, …).
  [[nodiscard]] const std::string& fallback_reason() const { return fallback_reason_; }

  // Starts `program` with `argv` in the containment (launch.h: the child is in its group
  // before it runs any code). Arms the guard. Errors as launch(); context "exec" when the
  // exec itself failed (126/127).
  Status launch(const std::string& program, const std::vector<std::string>& argv);
  [[nodiscard]] Pid workload_pid() const { return launched_ ? launched_->pid : 0; }
  // The workload's start time (stat field 22): every process of the run started at or after
  // it. nullopt when /proc did not show it.
  [[nodiscard]] std::optional<std::uint64_t> workload_start_ticks() const { return start_ticks_; }

  // The run's live members now (the workload included), added to run_pids().
  std::set<Pid> scan_members();
  // Every PID known to be the run's: the workload, every member scanned, every process met at
  // teardown.
  [[nodiscard]] const std::set<Pid>& run_pids() const { return run_pids_; }

  // The device files to look for at teardown: which of them each leftover held, read before
  // any signal (RunLeftover::devices). Without them (none given) the record says nothing.
  void watch_devices(std::vector<DeviceFile> files) { devices_ = std::move(files); }

  // Waits for the workload (Supervisor::supervise), logging each event; `hooks.on_event`
  // hears them too. An exception from a hook leaves through here, and the guard stays armed.
  RunEnd supervise(const SuperviseOptions& options, const SuperviseHooks& hooks);

  // Ends every member (tear_down_group), records the leftovers and how the workload ended
  // (end, exit_status/exit_signal, exit_code: the workload's, 124 on timeout, 1 when its
  // main process survived), and disarms the guard.
  const GroupTeardown& tear_down(RunEnd end, const TeardownOptions& options);

  // After the GPU check (log.record().gpu_check): whether the group still has a process
  // (a problem, said and logged), `clean`, exit code 1 instead of 0 when not clean, and the
  // group removed when empty (else left in place and named). Call once, after tear_down().
  void finish();

 private:
  RunSession(RunSessionOptions options, RunLog& log, procfs::ProcFs proc, Supervisor supervisor);
  void say(const std::string& line) const;
  // What `members` hold of devices_, before the teardown signals them (held_).
  void note_holdings(const std::vector<ProcessInfo>& members);
  // A leftover's devices as note_holdings found them; nullopt when not known.
  [[nodiscard]] std::optional<std::vector<std::string>> held_by(const ProcessInfo& p) const;
  // The guard's work: everything of the run SIGKILLed, reaped. Never throws.
  void kill_everything() noexcept;

  RunSessionOptions options_;
  RunLog& log_;
  double launched_at_ = 0;  // log time of the launch
  procfs::ProcFs proc_;
  Supervisor supervisor_;
  std::unique_ptr<Containment> containment_;
  CgroupGroup* group_ = nullptr;  // in containment_, cgroup mode only
  std::optional<Launched> launched_;
  std::optional<std::uint64_t> start_ticks_;
  std::set<Pid> run_pids_;
  std::string fallback_reason_;
  std::optional<GroupTeardown> teardown_;
  std::vector<DeviceFile> devices_;
  // (PID, start ticks) → the device files it held; every process read fully is here, holding
  // nothing or not.
  std::map<std::pair<Pid, std::uint64_t>, std::vector<std::string>> held_;
  bool armed_ = false;  // launched and not torn down yet
};

}  // namespace gpuclean::ops
