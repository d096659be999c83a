// Tearing down a planned set of processes: freeze, signal, escalate, and wait — bounded.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/duration.h"
#include "core/kill_model.h"
#include "core/model.h"
#include "procfs/proc_fs.h"

namespace gpuclean::ops {

struct TeardownOptions {
  int signal = 15;                           // SIGTERM
  Duration grace = std::chrono::seconds(5);  // after `signal`, before SIGKILL
  bool kill9 = true;                         // escalate to SIGKILL after the grace period
  Duration wait = std::chrono::seconds(30);  // after the last signal, for the exits
  // Asked once a target's pidfd is open (its PID can no longer be reused): is it still a member
  // of what was torn down? A PID read from cgroup.procs may have been freed and reused by an
  // unrelated process before the pidfd was opened. False: skipped, never signalled. Unset: yes.
  std::function<bool(Pid)> still_member;
};

// Processes in plan order (parents before children). Each is opened through a pidfd and its
// start time re-checked against the real /proc (a recycled PID is skipped, never signalled);
// then all are stopped
// (SIGSTOP, so none can fork away or respawn a sibling mid-kill), sent `signal` and SIGCONT,
// given `grace`, sent SIGKILL (unless !kill9) and waited for until `wait` passes. Never loops
// beyond those bounds.
// `progress` (may be empty) hears one line per phase, for a live line on a terminal.
// `proc` is read only to report a survivor's threads. `before_kill` (may be empty) runs when
// the grace period ends, while the targets that ignored the signal still live: the moment to
// note what they forked meanwhile.
std::vector<TargetOutcome> tear_down(const procfs::ProcFs& proc,
                                     const std::vector<ProcessInfo>& targets,
                                     const TeardownOptions& options,
                                     const std::function<void(const std::string&)>& progress = {},
                                     const std::function<void()>& before_kill = {});

// One line on why a process survived, from its threads: "thread 507 in D (refrigerator): …".
std::string why_remaining(const std::vector<ThreadInfo>& threads);
// Why a process of a frozen cgroup survived, with the thaw command (and `scontrol resume` for
// a Slurm job's): what a survivor's reason is when procfs::BlockedCheck finds it frozen.
std::string why_frozen(const FrozenCgroup& frozen, const std::optional<Owner>& owner);

// Where the processes to end come from, round after round: what was planned, and whatever
// appears meanwhile (a child forked after the plan, a worker respawned by its parent).
class MemberSource {
 public:
  MemberSource() = default;
  MemberSource(const MemberSource&) = default;
  MemberSource& operator=(const MemberSource&) = default;
  MemberSource(MemberSource&&) = default;
  MemberSource& operator=(MemberSource&&) = default;
  virtual ~MemberSource() = default;
  // Live members now: zombies with no live thread are left out (they only wait to be reaped).
  [[nodiscard]] virtual std::vector<ProcessInfo> members(const procfs::ProcFs& proc) const = 0;
  // Last resort after the signals: SIGKILL whatever is left in one step, where the source can
  // (a cgroup's cgroup.kill).
  virtual void kill_remaining() const {}
  // Whether `pid`, listed by members(), still belongs (TeardownOptions::still_member).
  [[nodiscard]] virtual bool still_member(const procfs::ProcFs& /*proc*/, Pid /*pid*/) const {
    return true;
  }
};

struct RoundsOutcome {
  std::vector<ProcessInfo> found;       // every member met, in the order found
  std::vector<TargetOutcome> outcomes;  // one per found process
  // Not known to be gone: survivors, and processes that could not even be opened (a pidfd
  // refused, EMFILE, …) — never counted as ended. A recycled PID means the process is gone.
  [[nodiscard]] std::size_t remaining() const;
};

// Ends every member of `source`: the first round gets options.signal, options.grace and
// SIGKILL (tear_down); later rounds — processes that appeared while the first ran — get
// SIGKILL at once; then kill_remaining(). At most four rounds, each bounded by options.wait.
// members() is also asked when a round's grace period ends (see tear_down's before_kill).
// `reap` (may be empty) runs before each round and at the end (run reaps its children).
// `before_signals` (may be empty) hears each round's new members before any of them is
// signalled: what they hold can still be read (run names what its leftovers held).
using MembersFound = std::function<void(const std::vector<ProcessInfo>&)>;
RoundsOutcome tear_down_rounds(const procfs::ProcFs& proc, const MemberSource& source,
                               const TeardownOptions& options,
                               const std::function<void()>& reap = {},
                               const std::function<void(const std::string&)>& progress = {},
                               const MembersFound& before_signals = {});

// kill's members: the planned processes (same PID and start time, still alive) and, when
// `follow_children`, every process that did not exist at plan time and either descends from a
// live member, is in a process group a planned member leads, or was forked by a member as the
// kernel's process events saw it (`forked_by`) — forked after the plan (the group and the
// events catch a child whose parent exited at once, re-parenting it to init; the events also
// one that left the group with setsid). A newcomer once seen stays a member by identity.
// Newcomers are taken only where the plan could have taken them: never gpuclean, never another
// user's process unless `privileged`.
class PlannedMembers : public MemberSource {
 public:
  struct Identity {
    Pid pid = 0;
    std::uint64_t start_ticks = 0;
    bool operator<(const Identity& other) const {
      return pid != other.pid ? pid < other.pid : start_ticks < other.start_ticks;
    }
  };
  // Who forked a process (PID, start ticks), where the kernel's process events saw its fork:
  // the forker's PID and, when known, its start ticks (from the event's clock: within
  // kForkerTicksTolerance of /proc's). Unset or nullopt: unknown.
  struct Forker {
    Pid pid = 0;
    std::optional<std::uint64_t> start_ticks;
  };
  using ForkedBy = std::function<std::optional<Forker>(Pid, std::uint64_t)>;
  // Where forks are reported: `forked_by`, and `caught_up`, run before each look, which waits
  // until the forks reported so far have been read (a parent that forks and exits within a
  // millisecond of the look).
  struct ForkEvents {
    ForkedBy forked_by;
    std::function<void()> caught_up;
  };
  static constexpr std::uint64_t kForkerTicksTolerance = 5;

  PlannedMembers(std::vector<ProcessInfo> planned, std::set<Identity> existing_at_plan,
                 bool follow_children, Pid self, Uid euid, bool privileged, ForkEvents forks = {})
      : planned_(std::move(planned)),
        existing_(std::move(existing_at_plan)),
        follow_children_(follow_children),
        self_(self),
        euid_(euid),
        privileged_(privileged),
        forks_(std::move(forks)) {}
  [[nodiscard]] std::vector<ProcessInfo> members(const procfs::ProcFs& proc) const override;

 private:
  // Whether FORKER is a planned member or an adopted newcomer, by identity (alive or not).
  [[nodiscard]] bool is_member_identity(const Forker& forker) const;

  std::vector<ProcessInfo> planned_;
  // Newcomers met so far: lineage is learnt while their parent lives and kept after it dies.
  mutable std::set<Identity> adopted_;
  std::set<Identity> existing_;
  bool follow_children_;
  Pid self_;
  Uid euid_;
  bool privileged_;
  ForkEvents forks_;
};

}  // namespace gpuclean::ops
