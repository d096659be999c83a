#include "ops/supervisor.h"

#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "ops/signals.h"
#include "procfs/parse.h"
#include "procfs/proc_fs.h"
#include "procfs/process_table.h"

namespace gpuclean::ops {
namespace {

sigset_t supervised_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int signo : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&set, signo);
  return set;
}

UniqueFd make_timer(Duration first, std::optional<Duration> every) {
  UniqueFd fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!fd) return fd;
  auto to_timespec = [](Duration d) {
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(d.count() / 1000);
    ts.tv_nsec = static_cast<long>((d.count() % 1000) * 1'000'000);
    // A zero it_value disarms a timer; a zero duration means "now".
    if (ts.tv_sec == 0 && ts.tv_nsec == 0) ts.tv_nsec = 1;
    return ts;
  };
  itimerspec spec{};
  spec.it_value = to_timespec(first);
  if (every) spec.it_interval = to_timespec(*every);
  ::timerfd_settime(fd.get(), 0, &spec, nullptr);
  return fd;
}

void watch(int epoll_fd, int fd) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = fd;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event);
}

}  // namespace

Result<Supervisor> Supervisor::create() {
  const sigset_t set = supervised_signals();
  sigset_t old_mask;
  if (::sigprocmask(SIG_BLOCK, &set, &old_mask) != 0) return errno_error("sigprocmask");
  UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) {
    const Error error = errno_error("signalfd");
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return error;
  }
  // Orphans of the workload (double-forked daemons, children of a killed server) re-parent
  // here instead of to init: they stay findable as descendants and we reap them.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    const Error error = errno_error("prctl(PR_SET_CHILD_SUBREAPER)");
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return error;
  }
  return Supervisor(std::move(fd));
}

void Supervisor::reap() {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;  // 0: none exited yet; -1/ECHILD: no children left
    if (pid == child_) child_status_ = status;
  }
}

RunEnd Supervisor::supervise(const Launched& child, const SuperviseOptions& options,
                             const SuperviseHooks& hooks) {
  child_ = child.pid;
  auto event = [&hooks](RunEventKind kind, const std::string& detail) {
    if (hooks.on_event) hooks.on_event(kind, detail);
  };
  UniqueFd epoll_fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_fd) {
    event(RunEventKind::kError, errno_error("epoll_create1").message());
    return RunEnd::kFailed;
  }
  watch(epoll_fd.get(), signal_fd_.get());
  UniqueFd timeout_fd;
  if (options.timeout) {
    timeout_fd = make_timer(*options.timeout, std::nullopt);
    if (!timeout_fd) {
      // A --timeout that cannot be kept must not be dropped silently: the run ends now.
      event(RunEventKind::kError, errno_error("timerfd_create").message());
      return RunEnd::kFailed;
    }
    watch(epoll_fd.get(), timeout_fd.get());
  }
  UniqueFd sample_fd;
  if (options.sample_every && hooks.on_sample) {
    sample_fd = make_timer(*options.sample_every, options.sample_every);
    watch(epoll_fd.get(), sample_fd.get());
  }
  for (int fd : options.watch_fds) watch(epoll_fd.get(), fd);

  // The workload may have exited before we got here; its SIGCHLD is queued then.
  int interrupts = 0;
  for (;;) {
    reap();
    if (child_status_) {
      event(RunEventKind::kExit, "");
      return RunEnd::kChildExited;
    }
    epoll_event ready{};
    const int n = ::epoll_wait(epoll_fd.get(), &ready, 1, -1);  // no timeout: no idle wake-ups
    if (n < 0 && errno != EINTR) {
      event(RunEventKind::kError, errno_error("epoll_wait").message());
      return RunEnd::kFailed;
    }
    if (n <= 0) continue;
    if (timeout_fd && ready.data.fd == timeout_fd.get()) {
      event(RunEventKind::kTimeout, "");
      return RunEnd::kTimeout;
    }
    if (std::find(options.watch_fds.begin(), options.watch_fds.end(), ready.data.fd) !=
        options.watch_fds.end()) {
      if (hooks.on_ready) hooks.on_ready(ready.data.fd);
      // Level-triggered: a pipe whose writer is gone would wake us forever.
      if ((ready.events & (EPOLLHUP | EPOLLERR)) != 0 && (ready.events & EPOLLIN) == 0) {
        ::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, ready.data.fd, nullptr);
      }
      continue;
    }
    if (sample_fd && ready.data.fd == sample_fd.get()) {
      std::uint64_t expirations = 0;
      [[maybe_unused]] const ssize_t got =
          ::read(sample_fd.get(), &expirations, sizeof(expirations));
      hooks.on_sample();
      continue;
    }
    signalfd_siginfo info{};
    while (::read(signal_fd_.get(), &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
      const int signo = static_cast<int>(info.ssi_signo);
      if (signo == SIGCHLD) continue;  // reaped at the top of the loop
      const bool escalating = signo == SIGINT || signo == SIGTERM;
      if (escalating && ++interrupts >= 2) {
        event(RunEventKind::kInterrupt, "second " + signal_name(signo) + ": tearing the run down");
        return RunEnd::kEscalated;
      }
      // A terminal sends ^C (SI_KERNEL) to the whole foreground process group: the workload
      // got it already when it shares ours.
      const bool from_terminal = info.ssi_code == SI_KERNEL;
      if (from_terminal && options.child_in_our_process_group) {
        event(RunEventKind::kSignal,
              signal_name(signo) + " from the terminal reached the workload");
        continue;
      }
      if (::syscall(SYS_pidfd_send_signal, child.pidfd.get(), signo, nullptr, 0) == 0) {
        event(RunEventKind::kSignal, signal_name(signo) + " forwarded to the workload");
      }
    }
  }
}

std::vector<ProcessInfo> Containment::live(const procfs::ProcFs& proc,
                                           const std::set<Pid>& pids) const {
  std::vector<ProcessInfo> out;
  for (Pid pid : pids) {
    auto info = proc.read_process(pid);
    if (!info.ok() || !has_live_thread(*info)) continue;
    if (excluded_.count({pid, info->start_ticks}) > 0) continue;
    out.push_back(std::move(info).value());
  }
  return out;
}

std::string CgroupContainment::limits() const {
  return "it catches every process the workload starts, however it detaches; not one that a "
         "service outside the group starts on its behalf (systemd-run, a container runtime, "
         "ssh to this host)";
}

std::vector<ProcessInfo> CgroupContainment::members(const procfs::ProcFs& proc) const {
  std::set<Pid> pids;
  if (auto in_group = group_.members(); in_group.ok())
    pids.insert(in_group->begin(), in_group->end());
  // A root workload may move itself out of the group; as our descendant it is still ours.
  const std::set<Pid> below = procfs::descendants(procfs::read_process_table(proc), ::getpid());
  pids.insert(below.begin(), below.end());
  pids.erase(::getpid());
  return live(proc, pids);
}

namespace {

// Whether gpuclean is an ancestor of `pid` now (read from the real /proc, parent by parent).
bool descends_from_self(const procfs::ProcFs& proc, Pid pid) {
  std::string text;
  Pid at = pid;
  for (int depth = 0; depth < 64 && at > 1; ++depth) {
    if (!procfs::read_file_at(proc.root_fd(), (std::to_string(at) + "/stat").c_str(), text, 4096)) {
      return false;
    }
    auto stat = procfs::parse_stat(text);
    if (!stat.ok()) return false;
    if (stat->ppid == ::getpid()) return true;
    at = stat->ppid;
  }
  return false;
}

}  // namespace

bool CgroupContainment::still_member(const procfs::ProcFs& proc, Pid pid) const {
  std::string text;
  if (procfs::read_file_at(proc.root_fd(), (std::to_string(pid) + "/cgroup").c_str(), text, 4096)) {
    const std::optional<std::string> path = procfs::parse_cgroup_v2(text);
    const std::string& group = group_.location().path;
    if (path && (*path == group || path->rfind(group + "/", 0) == 0)) return true;
  }
  // Moved out of the group (a root workload may): still ours if gpuclean is its ancestor.
  return descends_from_self(proc, pid);
}

bool SubreaperContainment::still_member(const procfs::ProcFs& proc, Pid pid) const {
  return descends_from_self(proc, pid);
}

void CgroupContainment::kill_remaining() const {
  (void)group_.kill_all();
}

std::string SubreaperContainment::limits() const {
  return "it catches every descendant of the workload (double-forked and setsid ones "
         "included), not a process that a service outside it starts on its behalf; and if "
         "gpuclean itself is SIGKILLed, the workload's descendants re-parent to init";
}

std::vector<ProcessInfo> SubreaperContainment::members(const procfs::ProcFs& proc) const {
  return live(proc, procfs::descendants(procfs::read_process_table(proc), ::getpid()));
}

GroupTeardown tear_down_group(const procfs::ProcFs& proc, const Containment& containment,
                              Supervisor& supervisor, const TeardownOptions& options,
                              const std::function<void(const std::string&)>& progress,
                              const MembersFound& before_signals) {
  return tear_down_rounds(
      proc, containment, options, [&supervisor] { supervisor.reap(); }, progress, before_signals);
}

}  // namespace gpuclean::ops
