#include "ops/teardown.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <optional>

#include "core/process_tree.h"
#include "ops/process_handle.h"
#include "ops/signals.h"
#include "procfs/blocked.h"
#include "procfs/process_table.h"

namespace gpuclean::ops {
namespace {

using Clock = std::chrono::steady_clock;

struct Live {
  std::size_t outcome;  // index into the outcomes
  ProcessHandle handle;
};

void send(Live& live, std::vector<TargetOutcome>& outcomes, int signo) {
  TargetOutcome& outcome = outcomes[live.outcome];
  const Status sent = live.handle.signal(signo);
  if (sent.ok()) {
    outcome.signals.push_back(signal_name(signo));
  } else if (sent.error().errnum != ESRCH) {
    // ESRCH: it exited in the meantime, which is what we want. Anything else (EPERM: its
    // owner changed, or a user namespace forbids it; EINVAL) must be said, not taken for
    // "it ignored the signal".
    outcome.signal_errors.push_back(signal_name(signo) + ": " + std::strerror(sent.error().errnum));
  }
}

}  // namespace

std::string why_remaining(const std::vector<ThreadInfo>& threads) {
  for (const ThreadInfo& t : threads) {
    if (t.state != 'D') continue;
    const std::string where = t.wchan.empty() ? "" : " in " + t.wchan;
    if (t.wchan.find("refrigerator") != std::string::npos) {
      return "thread " + std::to_string(t.tid) + " is frozen (D" + where +
             "): a cgroup freezer holds it; SIGKILL stays pending until the group is thawed";
    }
    return "thread " + std::to_string(t.tid) + " is in uninterruptible sleep (D" + where +
           "): signals wait until it returns from the kernel; if that is the GPU driver, only a "
           "GPU reset or a reboot frees it";
  }
  for (const ThreadInfo& t : threads) {
    if (t.state == 'T' || t.state == 't') {
      return "thread " + std::to_string(t.tid) + " is stopped (" + std::string(1, t.state) + ")";
    }
  }
  return "it is still running after every signal";
}

std::string why_frozen(const FrozenCgroup& frozen, const std::optional<Owner>& owner) {
  const bool v1 = frozen.version == FrozenCgroup::Version::kV1Freezer;
  std::string text = "frozen: its cgroup " + frozen.directory +
                     (v1 ? " is FROZEN (cgroup v1 freezer), and the signals sent wait for a thaw"
                         : " is frozen (cgroup v2), and the signals sent wait for a thaw");
  text += "; thaw it: " + thaw_command(frozen);
  if (owner && owner->kind == Owner::Kind::kSlurmJob) {
    text += " (a suspended Slurm job: scontrol resume " + owner->id + ")";
  }
  return text + " — gpuclean never thaws on its own";
}

std::vector<TargetOutcome> tear_down(const procfs::ProcFs& proc,
                                     const std::vector<ProcessInfo>& targets,
                                     const TeardownOptions& options,
                                     const std::function<void(const std::string&)>& progress,
                                     const std::function<void()>& before_kill) {
  auto say = [&progress](const std::string& line) {
    if (progress) progress(line);
  };
  std::vector<TargetOutcome> outcomes(targets.size());
  std::vector<Live> live;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    outcomes[i].pid = targets[i].pid;
    auto handle = ProcessHandle::open(targets[i].pid, targets[i].start_ticks);
    if (!handle.ok()) {
      // ENOENT: the pidfd opened, then /proc/PID/stat was gone — it exited in between.
      const int err = handle.error().errnum;
      const bool gone = err == ESRCH || err == ENOENT;
      outcomes[i].state = gone ? TargetOutcome::State::kGone : TargetOutcome::State::kSkipped;
      outcomes[i].recycled = err == kRecycledErrno;
      outcomes[i].reason =
          gone ? "already gone"
          : err == kRecycledErrno
              ? "skipped: recycled since the scan (its PID now belongs to a newer process)"
              : "skipped: " + handle.error().message();
      continue;
    }
    if (options.still_member && !options.still_member(targets[i].pid)) {
      // Its PID was listed as a member, and is someone else's now: the member is gone.
      outcomes[i].state = TargetOutcome::State::kSkipped;
      outcomes[i].recycled = true;
      outcomes[i].reason = "skipped: no longer a member (its PID now belongs to another process)";
      continue;
    }
    live.push_back({i, std::move(handle).value()});
  }

  const auto started = Clock::now();
  auto note_exits = [&] {
    for (const Live& l : live) {
      TargetOutcome& o = outcomes[l.outcome];
      if (o.state != TargetOutcome::State::kGone && l.handle.exited()) {
        o.state = TargetOutcome::State::kGone;
        o.seconds = std::chrono::duration<double>(Clock::now() - started).count();
      }
    }
  };
  auto wait_until = [&](Clock::time_point deadline) {
    std::vector<const ProcessHandle*> handles;
    for (const Live& l : live) {
      if (outcomes[l.outcome].state != TargetOutcome::State::kGone) handles.push_back(&l.handle);
    }
    // Wake on each exit to time it, until all are gone or the deadline passes.
    while (!handles.empty() && Clock::now() < deadline) {
      const auto left =
          wait_for_exit(handles, std::min(deadline, Clock::now() + std::chrono::milliseconds(20)));
      note_exits();
      std::vector<const ProcessHandle*> still;
      still.reserve(left.size());
      for (std::size_t i : left) still.push_back(handles[i]);
      handles.swap(still);
    }
    note_exits();
  };

  if (options.signal != SIGKILL) {
    for (Live& l : live) send(l, outcomes, SIGSTOP);  // freeze the whole set first
    for (Live& l : live) send(l, outcomes, options.signal);
    for (Live& l : live) send(l, outcomes, SIGCONT);
    say(signal_name(options.signal) + " sent to " + std::to_string(live.size()) + "; grace " +
        format_duration(options.grace));
    wait_until(Clock::now() + options.grace);
  }
  if (before_kill) before_kill();
  if (options.kill9 || options.signal == SIGKILL) {
    for (Live& l : live) {
      if (outcomes[l.outcome].state != TargetOutcome::State::kGone) send(l, outcomes, SIGKILL);
    }
  }
  std::size_t left = 0;
  for (const Live& l : live) left += outcomes[l.outcome].state != TargetOutcome::State::kGone;
  if (left > 0) {
    say("waiting for " + std::to_string(left) + " to exit (at most " +
        format_duration(options.wait) + ")");
  }
  wait_until(Clock::now() + options.wait);

  for (Live& l : live) {
    TargetOutcome& o = outcomes[l.outcome];
    if (o.state == TargetOutcome::State::kGone) continue;
    o.state = TargetOutcome::State::kRemaining;
    std::optional<FrozenCgroup> frozen;
    std::optional<Owner> owner;
    if (auto info = proc.read_process(l.handle.pid()); info.ok()) {
      o.threads = info->threads;
      frozen = procfs::BlockedCheck::for_proc(proc).frozen(*info);
      owner = info->owner;
    }
    if (!o.signal_errors.empty()) {
      std::string errors;
      for (const std::string& e : o.signal_errors) errors += (errors.empty() ? "" : "; ") + e;
      o.reason = "the kernel refused the signals (" + errors + ")";
    } else if (frozen) {
      o.reason = why_frozen(*frozen, owner);
    } else {
      o.reason = options.kill9 || options.signal == SIGKILL
                     ? why_remaining(o.threads)
                     : "it survived " + signal_name(options.signal) + " and --no-kill9 was given";
    }
  }
  return outcomes;
}

std::size_t RoundsOutcome::remaining() const {
  std::size_t n = 0;
  for (const TargetOutcome& o : outcomes) {
    n += o.state == TargetOutcome::State::kRemaining ||
         (o.state == TargetOutcome::State::kSkipped && !o.recycled);
  }
  return n;
}

RoundsOutcome tear_down_rounds(const procfs::ProcFs& proc, const MemberSource& source,
                               const TeardownOptions& options, const std::function<void()>& reap,
                               const std::function<void(const std::string&)>& progress,
                               const MembersFound& before_signals) {
  RoundsOutcome result;
  auto reap_now = [&reap] {
    if (reap) reap();
  };
  std::set<std::pair<Pid, std::uint64_t>> seen;  // (pid, start): a survivor is not re-signalled
  constexpr int kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    reap_now();
    std::vector<ProcessInfo> fresh;
    for (ProcessInfo& info : source.members(proc)) {
      if (seen.insert({info.pid, info.start_ticks}).second) fresh.push_back(std::move(info));
    }
    if (fresh.empty()) break;
    if (before_signals) before_signals(fresh);
    TeardownOptions round_options = options;
    round_options.still_member = [&source, &proc](Pid pid) {
      return source.still_member(proc, pid);
    };
    // Whatever appears after the first round was forked during it: no second grace period.
    // With --no-kill9 they get the first signal, still without a grace period.
    if (round > 0) {
      round_options.signal = options.kill9 ? SIGKILL : options.signal;
      round_options.grace = Duration(0);
    }
    std::vector<TargetOutcome> outcomes =
        tear_down(proc, fresh, round_options, progress, [&] { (void)source.members(proc); });
    source.kill_remaining();
    for (std::size_t i = 0; i < fresh.size(); ++i) {
      // cgroup.kill may have ended what outlived the per-process SIGKILL wait.
      TargetOutcome& o = outcomes[i];
      if (o.state == TargetOutcome::State::kRemaining) {
        auto now = proc.read_process(o.pid);
        if (!now.ok() || now->start_ticks != fresh[i].start_ticks || !has_live_thread(*now)) {
          o.state = TargetOutcome::State::kGone;
          o.reason.clear();
        }
      }
    }
    for (std::size_t i = 0; i < fresh.size(); ++i) {
      result.found.push_back(std::move(fresh[i]));
      result.outcomes.push_back(std::move(outcomes[i]));
    }
  }
  reap_now();
  return result;
}

std::vector<ProcessInfo> PlannedMembers::members(const procfs::ProcFs& proc) const {
  if (follow_children_ && forks_.caught_up) forks_.caught_up();
  const ProcessTable table = procfs::read_process_table(proc);
  std::vector<ProcessInfo> out;
  std::set<Pid> alive;  // members now, for the newcomers' ancestry
  // Process groups a planned member leads — while they are still that group: the kernel does
  // not reuse a PID while a group of that ID has members, so a group P is the planned one as
  // long as P is the planned leader or no process has PID P.
  std::set<Pid> led_groups;
  for (const ProcessInfo& planned : planned_) {
    auto it = table.find(planned.pid);
    if (planned.pgid == planned.pid &&
        (it == table.end() || it->second.start_ticks == planned.start_ticks)) {
      led_groups.insert(planned.pid);
    }
    if (it == table.end()) {
      // Not in the table: gone — unless it only could not be read (EMFILE, EACCES); then it
      // goes to tear_down, whose pidfd says which.
      auto now = proc.read_process(planned.pid);
      if (!now.ok() && !now.error().is_vanished()) out.push_back(planned);
      continue;
    }
    if (it->second.start_ticks != planned.start_ticks) {
      // Recycled since the scan: handed to tear_down as planned, whose pidfd check skips it
      // and says so (never signalled).
      out.push_back(planned);
      continue;
    }
    if (!has_live_thread(it->second)) continue;
    alive.insert(planned.pid);
    out.push_back(it->second);
  }
  if (!follow_children_) return out;
  auto is_member = [&](Pid pid) {
    auto it = table.find(pid);
    return alive.count(pid) > 0 ||
           (it != table.end() && adopted_.count({pid, it->second.start_ticks}) > 0);
  };
  // Newcomers: the ancestor walk finds a grandchild whatever the PID order, as long as some
  // ancestor is a member now.
  for (const auto& [pid, info] : table) {
    if (existing_.count({pid, info.start_ticks}) > 0 || alive.count(pid) > 0) continue;
    if (pid == self_ || !has_live_thread(info)) continue;
    if (!privileged_ && info.uid && *info.uid != euid_) continue;
    const std::set<Pid> chain = ancestors(table, pid);
    if (chain.count(self_) > 0) continue;
    const bool known = adopted_.count({pid, info.start_ticks}) > 0;
    const bool descends = std::any_of(chain.begin(), chain.end(), is_member);
    // The kernel saw a member fork it: its lineage whatever its parent and group are now.
    const std::optional<Forker> forker =
        forks_.forked_by ? forks_.forked_by(pid, info.start_ticks) : std::nullopt;
    const bool forked_by_member = forker && is_member_identity(*forker);
    // The group ties a newcomer only once it lost its parent (re-parented to init): a child
    // forked by another process of a shared job (`a | b`, only `a` named) still has its parent.
    const auto parent = table.find(info.ppid);
    const bool orphaned = info.ppid == 1 || parent == table.end();
    const bool in_led_group = orphaned && led_groups.count(info.pgid) > 0;
    if (!known && !descends && !in_led_group && !forked_by_member) continue;
    adopted_.insert({pid, info.start_ticks});
    out.push_back(info);
  }
  return out;
}

bool PlannedMembers::is_member_identity(const Forker& forker) const {
  if (!forker.start_ticks) return false;  // a PID alone may be another process
  const auto near = [&](std::uint64_t ticks) {
    const std::uint64_t a = *forker.start_ticks;
    return (a > ticks ? a - ticks : ticks - a) <= kForkerTicksTolerance;
  };
  for (const ProcessInfo& p : planned_) {
    if (p.pid == forker.pid && near(p.start_ticks)) return true;
  }
  for (auto it = adopted_.lower_bound({forker.pid, 0});
       it != adopted_.end() && it->pid == forker.pid; ++it) {
    if (near(it->start_ticks)) return true;
  }
  return false;
}

}  // namespace gpuclean::ops
