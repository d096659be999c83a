// The supervisor of `gpuclean run`: waits for the workload without polling (one epoll over a
// signalfd and timerfds), forwards signals, reaps whatever is re-parented to it, and tears the
// whole run down at the end.
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/duration.h"
#include "core/model.h"
#include "core/result.h"
#include "core/run_record.h"
#include "core/unique_fd.h"
#include "ops/cgroup.h"
#include "ops/launch.h"
#include "ops/teardown.h"
#include "procfs/proc_fs.h"

namespace gpuclean::ops {

struct SuperviseOptions {
  std::optional<Duration> timeout;       // end the run after this long (exit 124)
  std::optional<Duration> sample_every;  // call on_sample this often (nothing when unset)
  // The workload shares gpuclean's process group, so a terminal's ^C reaches it directly and
  // must not be forwarded a second time.
  bool child_in_our_process_group = false;
  // More descriptors to wait on (the GPU sampler's answers): on_ready is called when one is
  // readable; one whose writer is gone is dropped.
  std::vector<int> watch_fds;
};

struct SuperviseHooks {
  std::function<void()> on_sample;
  std::function<void(int fd)> on_ready;
  // kind: "signal" (forwarded), "interrupt" (escalation), "exit", "timeout"
  std::function<void(RunEventKind kind, const std::string& detail)> on_event;
};

enum class RunEnd {
  kChildExited,  // the workload's main process exited (or was killed by a signal)
  kTimeout,      // --timeout passed
  kEscalated,    // a second SIGINT/SIGTERM: tear down now
  kFailed,       // epoll itself failed: tear down rather than leave the workload unwatched
};

class Supervisor {
 public:
  // Blocks SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGCHLD (they are read from a signalfd from now
  // on) and makes this process a child subreaper, so orphans of the workload re-parent to it.
  // Create it before launching: a signal between fork and the loop then waits in the queue.
  static Result<Supervisor> create();
  Supervisor(Supervisor&&) noexcept = default;
  Supervisor& operator=(Supervisor&&) noexcept = default;
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;
  // Leaves the signals blocked: a ^C or a scheduler's SIGTERM that comes during the teardown
  // must neither cut it short nor replace the exit code; gpuclean exits right after.
  ~Supervisor() = default;

  // Sleeps in epoll_wait until the workload exits, the timeout passes or an escalation comes.
  // The first SIGINT/SIGTERM and every SIGHUP/SIGQUIT go to `child` through its pidfd.
  RunEnd supervise(const Launched& child, const SuperviseOptions& options,
                   const SuperviseHooks& hooks);

  // Reaps every exited child (the workload and anything re-parented here), without blocking.
  void reap();
  // The workload's wait status, once it has been reaped.
  [[nodiscard]] std::optional<int> child_status() const { return child_status_; }

 private:
  explicit Supervisor(UniqueFd signal_fd) : signal_fd_(std::move(signal_fd)) {}
  UniqueFd signal_fd_;
  Pid child_ = 0;
  std::optional<int> child_status_;
};

// The processes a run owns, however they detached.
class Containment : public MemberSource {
 public:
  // A process of gpuclean's own (the GPU sampler) that is never a member: by PID and start
  // time, so a workload process that is given the PID later is still one.
  void exclude(Pid pid, std::uint64_t start_ticks) { excluded_.insert({pid, start_ticks}); }
  // "cgroup" or "subreaper".
  [[nodiscard]] virtual std::string mode() const = 0;
  // What this mode cannot catch, one sentence for the user.
  [[nodiscard]] virtual std::string limits() const = 0;

 protected:
  // The live processes of `pids` that are not excluded, as /proc shows them now.
  [[nodiscard]] std::vector<ProcessInfo> live(const procfs::ProcFs& proc,
                                              const std::set<Pid>& pids) const;

 private:
  std::set<std::pair<Pid, std::uint64_t>> excluded_;
};

// Members: every process in `group` and every descendant of this process.
class CgroupContainment : public Containment {
 public:
  explicit CgroupContainment(CgroupGroup group) : group_(std::move(group)) {}
  [[nodiscard]] std::string mode() const override { return "cgroup"; }
  [[nodiscard]] std::string limits() const override;
  [[nodiscard]] std::vector<ProcessInfo> members(const procfs::ProcFs& proc) const override;
  void kill_remaining() const override;
  // In the group (its /proc/PID/cgroup is the group's or below), or a descendant of gpuclean.
  [[nodiscard]] bool still_member(const procfs::ProcFs& proc, Pid pid) const override;
  [[nodiscard]] const CgroupGroup& group() const { return group_; }
  CgroupGroup& group() { return group_; }

 private:
  CgroupGroup group_;
};

// Members: every descendant of this process (a child subreaper keeps orphans among them).
class SubreaperContainment : public Containment {
 public:
  [[nodiscard]] std::string mode() const override { return "subreaper"; }
  [[nodiscard]] std::string limits() const override;
  [[nodiscard]] std::vector<ProcessInfo> members(const procfs::ProcFs& proc) const override;
  // Still a descendant of gpuclean.
  [[nodiscard]] bool still_member(const procfs::ProcFs& proc, Pid pid) const override;
};

using GroupTeardown = RoundsOutcome;

// tear_down_rounds over `containment`, reaping before each round and at the end, so nothing
// is left as a zombie of ours.
GroupTeardown tear_down_group(const procfs::ProcFs& proc, const Containment& containment,
                              Supervisor& supervisor, const TeardownOptions& options,
                              const std::function<void(const std::string&)>& progress = {},
                              const MembersFound& before_signals = {});

}  // namespace gpuclean::ops
