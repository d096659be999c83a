#include "ops/run_session.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "ops/signals.h"
#include "procfs/holder_scan.h"

namespace gpuclean::ops {
namespace {

constexpr int kExitDirty = 1;
constexpr int kExitTimeout = 124;

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitDirty;
}

LeftoverOutcome outcome_of(TargetOutcome::State state) {
  switch (state) {
    case TargetOutcome::State::kGone:
      return LeftoverOutcome::kGone;
    case TargetOutcome::State::kRemaining:
      return LeftoverOutcome::kRemaining;
    case TargetOutcome::State::kSkipped:
      break;
  }
  return LeftoverOutcome::kSkipped;
}

}  // namespace

void prepare_supervisor_process() {
  (void)::signal(SIGPIPE, SIG_IGN);
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &files);
  }
}

RunSession::RunSession(RunSessionOptions options, RunLog& log, procfs::ProcFs proc,
                       Supervisor supervisor)
    : options_(std::move(options)),
      log_(log),
      proc_(std::move(proc)),
      supervisor_(std::move(supervisor)) {}

Result<std::unique_ptr<RunSession>> RunSession::create(const RunSessionOptions& options,
                                                       RunLog& log) {
  auto proc = procfs::ProcFs::open("/proc");
  if (!proc.ok()) return proc.error();
  // Signals are blocked from here on: one arriving before the loop waits in the queue.
  auto supervisor = Supervisor::create();
  if (!supervisor.ok()) return supervisor.error();
  std::unique_ptr<RunSession> session(
      new RunSession(options, log, std::move(proc).value(), std::move(supervisor).value()));

  std::string why_not;
  if (options.no_cgroup) {
    why_not = "--no-cgroup was given";
  } else {
    auto parent =
        options.cgroup_parent.empty()
            ? own_cgroup("/proc")
            : Result<CgroupLocation>(CgroupLocation{options.cgroup_parent, options.cgroup_parent});
    if (parent.ok()) {
      auto group = CgroupGroup::create(*parent, "gpuclean-run." + std::to_string(::getpid()));
      if (group.ok()) {
        auto cgroup = std::make_unique<CgroupContainment>(std::move(group).value());
        session->group_ = &cgroup->group();
        session->containment_ = std::move(cgroup);
      } else {
        why_not = group.error().message();
      }
    } else {
      why_not = parent.error().message();
    }
  }
  if (!session->containment_) session->containment_ = std::make_unique<SubreaperContainment>();

  RunRecord& record = log.record();
  record.mode = session->containment_->mode();
  record.mode_note = session->containment_->limits();
  if (session->group_ != nullptr) record.cgroup = session->group_->location().path;
  session->fallback_reason_ = std::move(why_not);
  return session;
}

RunSession::~RunSession() {
  if (armed_) kill_everything();
}

void RunSession::say(const std::string& line) const {
  if (options_.say) options_.say(line);
}

Status RunSession::launch(const std::string& program, const std::vector<std::string>& argv) {
  LaunchOptions launch_options;
  if (group_ != nullptr) {
    launch_options.cgroup_dir_fd = group_->dir_fd();
    launch_options.cgroup_procs_fd = group_->procs_fd();
  }
  launch_options.new_session = group_ == nullptr;
  launch_options.parent_death_signal = SIGKILL;
  auto launched = ops::launch(program, argv, launch_options);
  if (!launched.ok()) return launched.error();
  launched_ = std::move(launched).value();
  armed_ = true;  // from here on, nothing of the run may outlive this object unended
  // Not reaped before supervise(): /proc still shows it, a zombie at worst.
  if (auto info = proc_.read_process(launched_->pid); info.ok()) start_ticks_ = info->start_ticks;
  run_pids_.insert(launched_->pid);
  RunRecord& record = log_.record();
  record.pid = launched_->pid;
  log_.event(RunEventKind::kStart,
             "pid " + std::to_string(launched_->pid) + " in " + record.mode + " mode");
  launched_at_ = log_.now();
  return Ok{};
}

std::set<Pid> RunSession::scan_members() {
  std::set<Pid> pids;
  for (const ProcessInfo& p : containment_->members(proc_)) pids.insert(p.pid);
  if (launched_) pids.insert(launched_->pid);
  run_pids_.insert(pids.begin(), pids.end());
  return pids;
}

RunEnd RunSession::supervise(const SuperviseOptions& options, const SuperviseHooks& hooks) {
  SuperviseOptions with_group = options;
  with_group.child_in_our_process_group = group_ != nullptr;
  SuperviseHooks logged = hooks;
  logged.on_event = [this, &hooks](RunEventKind kind, const std::string& detail) {
    log_.event(kind, detail);
    if (hooks.on_event) hooks.on_event(kind, detail);
  };
  const RunEnd end = supervisor_.supervise(*launched_, with_group, logged);
  log_.record().workload_seconds = log_.now() - launched_at_;
  return end;
}

const GroupTeardown& RunSession::tear_down(RunEnd end, const TeardownOptions& options) {
  RunRecord& record = log_.record();
  const double teardown_at = log_.now();
  log_.event(RunEventKind::kTeardown, "");
  MembersFound note;
  if (!devices_.empty()) {
    note = [this](const std::vector<ProcessInfo>& found) { note_holdings(found); };
  }
  teardown_ = tear_down_group(proc_, *containment_, supervisor_, options, {}, note);
  armed_ = false;  // the normal path ended everything it could: the guard has nothing to add
  const GroupTeardown& teardown = *teardown_;
  log_.event(RunEventKind::kTeardownDone, std::to_string(teardown.found.size()) + " found, " +
                                              std::to_string(teardown.remaining()) + " remaining");
  for (std::size_t i = 0; i < teardown.found.size(); ++i) {
    const ProcessInfo& p = teardown.found[i];
    const TargetOutcome& outcome = teardown.outcomes[i];
    run_pids_.insert(p.pid);
    // The workload's main process is not a leftover when a timeout or interrupt ended it.
    if (launched_ && p.pid == launched_->pid) continue;
    RunLeftover leftover;
    leftover.pid = p.pid;
    leftover.ppid = p.ppid;
    leftover.comm = p.comm;
    leftover.cmdline = p.cmdline;
    leftover.signals = outcome.signals;
    leftover.outcome = outcome_of(outcome.state);
    leftover.reason = outcome.reason;
    leftover.t = teardown_at;
    leftover.devices = held_by(p);
    record.leftovers.push_back(std::move(leftover));
  }

  std::optional<WorkloadEnd> how;
  if (end == RunEnd::kTimeout) how = WorkloadEnd::kTimeout;
  if (end == RunEnd::kEscalated) how = WorkloadEnd::kInterrupted;
  if (end == RunEnd::kFailed) how = WorkloadEnd::kSupervisionFailed;
  if (auto status = supervisor_.child_status()) {
    if (WIFEXITED(*status)) record.exit_status = WEXITSTATUS(*status);
    if (WIFSIGNALED(*status)) record.exit_signal = WTERMSIG(*status);
    record.end = how.value_or(WIFSIGNALED(*status) ? WorkloadEnd::kSignaled : WorkloadEnd::kExited);
    record.exit_code = end == RunEnd::kTimeout ? kExitTimeout : exit_code_of(*status);
  } else {
    // The main process itself survived SIGKILL (frozen, or stuck in the kernel).
    record.end = how.value_or(WorkloadEnd::kExited);
    record.exit_code = end == RunEnd::kTimeout ? kExitTimeout : kExitDirty;
  }
  return teardown;
}

void RunSession::note_holdings(const std::vector<ProcessInfo>& members) {
  procfs::ScanOptions scan;
  scan.threads = 1;  // a few processes, read while they still run: no pool to start
  scan.only.emplace();
  // The workload's main process is no leftover.
  auto leftover = [this](const ProcessInfo& p) { return !launched_ || p.pid != launched_->pid; };
  for (const ProcessInfo& p : members) {
    if (leftover(p)) scan.only->push_back(p.pid);
  }
  if (scan.only->empty()) return;
  const procfs::HolderScan found = procfs::scan_holders(proc_, devices_, scan);
  const std::set<Pid> unread(found.not_read_fully.begin(), found.not_read_fully.end());
  for (const ProcessInfo& p : members) {
    // Read: it holds nothing, or what the holdings below add.
    if (leftover(p) && unread.count(p.pid) == 0) held_.try_emplace({p.pid, p.start_ticks});
  }
  for (const procfs::FileHolding& h : found.holdings) {
    // Its own start time, read by the scan: a PID handed on since is another process.
    auto it = held_.find({h.pid, h.start_ticks});
    if (it == held_.end()) continue;
    for (const HeldFile& f : h.files) it->second.push_back(f.path);
  }
}

std::optional<std::vector<std::string>> RunSession::held_by(const ProcessInfo& p) const {
  auto it = held_.find({p.pid, p.start_ticks});
  if (it == held_.end()) return std::nullopt;
  return it->second;
}

void RunSession::finish() {
  RunRecord& record = log_.record();
  const std::size_t remaining = teardown_ ? teardown_->remaining() : 0;
  // The group itself must be empty too: a process no listing showed would still be in it.
  bool populated = false;
  if (group_ != nullptr) {
    auto events = group_->populated();
    populated = events.ok() && *events;
  }
  if (populated && remaining == 0) {
    log_.event(RunEventKind::kProblem, "the cgroup still has processes after the teardown");
    say("cgroup " + record.cgroup + " still has processes after the teardown");
  }
  record.clean = remaining == 0 && !populated &&
                 (record.gpu_check == GpuCheck::kBack || record.gpu_check == GpuCheck::kNone);
  if (!record.clean && record.exit_code == 0) record.exit_code = kExitDirty;
  record.duration = log_.now();
  if (group_ != nullptr && !populated) {
    if (auto removed = group_->remove(); !removed.ok()) say(removed.error().message());
  }
  if (populated) say("cgroup " + record.cgroup + " is left in place with what remains in it");
}

void RunSession::kill_everything() noexcept {
  armed_ = false;
  // First what needs no memory and no /proc: the whole group at once, and the workload.
  containment_->kill_remaining();
  if (launched_) {
    (void)::syscall(SYS_pidfd_send_signal, launched_->pidfd.get(), SIGKILL, nullptr, 0);
  }
  // Then SIGKILL rounds over every member (the subreaper mode has no cgroup.kill), bounded,
  // reaping after each: nothing is left as a zombie of ours either.
  std::size_t found = 0;
  std::size_t remaining = 0;
  try {
    TeardownOptions options;
    options.signal = SIGKILL;
    options.grace = Duration{0};
    options.wait = options_.guard_wait;
    const GroupTeardown teardown = tear_down_group(proc_, *containment_, supervisor_, options);
    found = teardown.found.size();
    remaining = teardown.remaining();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor; the SIGKILLs above went out
  }
  supervisor_.reap();
  try {
    say("the run ended abnormally: every process of it was killed (" + std::to_string(found) +
        " found, " + std::to_string(remaining) + " remaining)");
    log_.event(RunEventKind::kGuard, std::to_string(found) + " killed");
  } catch (...) {  // NOLINT(bugprone-empty-catch): nothing more to do
  }
}

}  // namespace gpuclean::ops
