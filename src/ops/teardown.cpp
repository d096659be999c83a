#include "ops/teardown.h"

#include <csignal>
#include <optional>

#include "ops/process_handle.h"
#include "ops/signals.h"

namespace gpuclean::ops {
namespace {

using Clock = std::chrono::steady_clock;

struct Live {
  std::size_t outcome;  // index into the outcomes
  ProcessHandle handle;
};

void send(Live& live, std::vector<TargetOutcome>& outcomes, int signo) {
  // ESRCH: it exited in the meantime, which is what we want.
  if (live.handle.signal(signo).ok()) outcomes[live.outcome].signals.push_back(signal_name(signo));
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

std::vector<TargetOutcome> tear_down(const procfs::ProcFs& proc,
                                     const std::vector<ProcessInfo>& targets,
                                     const TeardownOptions& options,
                                     const std::function<void(const std::string&)>& progress) {
  auto say = [&progress](const std::string& line) {
    if (progress) progress(line);
  };
  std::vector<TargetOutcome> outcomes(targets.size());
  std::vector<Live> live;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    outcomes[i].pid = targets[i].pid;
    auto handle = ProcessHandle::open(proc, targets[i].pid, targets[i].start_ticks);
    if (!handle.ok()) {
      const int err = handle.error().errnum;
      outcomes[i].state =
          err == ESRCH ? TargetOutcome::State::kGone : TargetOutcome::State::kSkipped;
      outcomes[i].recycled = err == kRecycledErrno;
      outcomes[i].reason = err == ESRCH ? "already gone"
                           : err == kRecycledErrno
                               ? "skipped: its PID now belongs to a newer process (recycled)"
                               : "skipped: " + handle.error().message();
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
        std::to_string(options.grace.count()) + " ms");
    wait_until(Clock::now() + options.grace);
  }
  if (options.kill9 || options.signal == SIGKILL) {
    for (Live& l : live) {
      if (outcomes[l.outcome].state != TargetOutcome::State::kGone) send(l, outcomes, SIGKILL);
    }
  }
  std::size_t left = 0;
  for (const Live& l : live) left += outcomes[l.outcome].state != TargetOutcome::State::kGone;
  if (left > 0) {
    say("waiting for " + std::to_string(left) + " to exit (at most " +
        std::to_string(options.wait.count()) + " ms)");
  }
  wait_until(Clock::now() + options.wait);

  for (Live& l : live) {
    TargetOutcome& o = outcomes[l.outcome];
    if (o.state == TargetOutcome::State::kGone) continue;
    o.state = TargetOutcome::State::kRemaining;
    if (auto info = proc.read_process(l.handle.pid()); info.ok()) o.threads = info->threads;
    o.reason = options.kill9 || options.signal == SIGKILL
                   ? why_remaining(o.threads)
                   : "it survived " + signal_name(options.signal) + " and --no-kill9 was given";
  }
  return outcomes;
}

}  // namespace gpuclean::ops
