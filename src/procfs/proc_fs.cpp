#include "procfs/proc_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "core/bounded_read.h"
#include "core/deadline_pool.h"

#include "core/whole_number.h"
#include "procfs/blocked.h"
#include "procfs/cgroup_trust.h"
#include "procfs/owner.h"
#include "procfs/parse.h"
#include "procfs/user_names.h"

namespace gpuclean::procfs {

struct ProcFs::State {
  std::string root;
  UniqueFd root_fd;
  std::optional<std::int64_t> boot_time;
  long clock_ticks = 100;
  std::optional<Duration> read_deadline;
  UserNames users;
  // Which part of a cgroup path root named, from this /proc's self/mountinfo (procfs/owner.h).
  TrustedPrefix trusted_cgroup_prefix;
  // (pid, start ticks) of processes whose memory map was found locked → whether the read left
  // blocked on it has returned since (then the lock was released and the entry is dropped).
  std::mutex locked_mutex;
  std::map<std::pair<Pid, std::uint64_t>, std::shared_ptr<std::atomic<bool>>> locked;
};

namespace {

// Worker threads for reading n processes: one per 64 (a thread costs tens of microseconds to
// start), at most one per core and 16.
unsigned reader_threads(std::size_t processes) {
  constexpr std::size_t kPerThread = 64;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(
      std::min<std::size_t>({cores, 16, std::max<std::size_t>(1, processes / kPerThread)}));
}

std::optional<Pid> parse_pid_name(const char* name) {
  const auto pid = whole_number<Pid>(name);
  if (!pid || *pid <= 0) return std::nullopt;
  return pid;
}

// Directory entries that are numbers (PIDs or TIDs), ascending.
Result<std::vector<Pid>> numeric_entries(int dir_fd, const std::string& what) {
  const int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_error("open " + what);
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int saved = errno;
    ::close(fd);
    return Error{saved, "opendir " + what};
  }
  std::vector<Pid> pids;
  while (dirent* entry = ::readdir(dir)) {
    if (auto pid = parse_pid_name(entry->d_name)) pids.push_back(*pid);
  }
  ::closedir(dir);
  std::sort(pids.begin(), pids.end());
  return pids;
}

ThreadInfo read_thread(int task_dir_fd, Pid tid) {
  ThreadInfo thread;
  thread.tid = tid;
  const std::string name = std::to_string(tid);
  UniqueFd tid_fd(::openat(task_dir_fd, name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!tid_fd) return thread;
  std::string text;
  if (read_file_at(tid_fd.get(), "stat", text)) {
    if (auto stat = parse_stat(text); stat.ok()) thread.state = stat->state;
  }
  if (read_file_at(tid_fd.get(), "wchan", text) && text != "0") thread.wchan = text;
  return thread;
}

}  // namespace

bool read_file_at(int dir_fd, const char* name, std::string& out, std::size_t cap) {
  out.clear();
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  const Status got = read_bounded(fd.get(), out, cap, PastCap::kCut);
  fd.reset();  // before errno is set: a close must not change it
  if (!got.ok()) errno = got.error().errnum;
  return got.ok();
}

Result<std::string> read_file_at(int dir_fd, const std::string& name, std::size_t cap) {
  std::string text;
  if (!read_file_at(dir_fd, name.c_str(), text, cap)) return errno_error("read " + name);
  return text;
}

Result<ProcFs> ProcFs::open(const std::string& root, std::optional<Duration> read_deadline) {
  UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return errno_error("open " + root);
  auto state = std::make_shared<State>();
  if (auto stat = read_file_at(fd.get(), "stat"); stat.ok()) state->boot_time = parse_btime(*stat);
  if (auto mountinfo = read_file_at(fd.get(), "self/mountinfo"); mountinfo.ok()) {
    state->trusted_cgroup_prefix = trusted_prefix_here(parse_cgroup_mounts(*mountinfo));
  }
  state->root = root;
  state->root_fd = std::move(fd);
  state->read_deadline = read_deadline;
  const long ticks = ::sysconf(_SC_CLK_TCK);
  if (ticks > 0) state->clock_ticks = ticks;
  return ProcFs(std::move(state));
}

const std::string& ProcFs::root() const {
  return state_->root;
}
int ProcFs::root_fd() const {
  return state_->root_fd.get();
}
std::optional<Duration> ProcFs::read_deadline() const {
  return state_->read_deadline;
}
std::optional<std::int64_t> ProcFs::boot_time() const {
  return state_->boot_time;
}

Result<std::vector<Pid>> ProcFs::list_pids() const {
  return numeric_entries(root_fd(), root());
}

namespace {

// How far a read on a worker got, for the caller that stopped waiting for it.
struct ReadProgress {
  std::atomic<bool> in_memory_read{false};    // inside the cmdline read (takes the mmap lock)
  std::atomic<std::uint64_t> start_ticks{0};  // of the process being read, once its stat is in
  // The whole read has returned (set by the worker, read by a later ProcFs call).
  std::shared_ptr<std::atomic<bool>> returned = std::make_shared<std::atomic<bool>>(false);
};

// The command line, into info.cmdline. It takes the target's mmap lock (the caller's deadline
// bounds it; `progress` says the read is in it). A zombie leader has let go of its memory map,
// so its own cmdline is empty while its live threads still share the map: then the first live
// thread's (task/TID/cmdline), with the same cap (issue 48 item 9: otherwise the row that
// matters most shows as [comm]). A plain zombie has no live thread and keeps [comm].
void read_command_line(int dir_fd, ProcessInfo& info, ReadProgress* progress) {
  if (progress != nullptr) progress->in_memory_read = true;
  std::string text;
  if (read_file_at(dir_fd, "cmdline", text)) info.cmdline = parse_cmdline(text);
  if (info.cmdline.empty() && info.state == 'Z') {
    for (const ThreadInfo& thread : info.threads) {
      if (thread.tid == info.pid || thread.state == 'Z' || thread.state == 'X') continue;
      const std::string name = "task/" + std::to_string(thread.tid) + "/cmdline";
      if (read_file_at(dir_fd, name.c_str(), text)) info.cmdline = parse_cmdline(text);
      if (!info.cmdline.empty()) break;
    }
  }
  if (progress != nullptr) progress->in_memory_read = false;
}

// Everything read_process reads but the user name (an NSS lookup: not a /proc read, done by the
// caller, outside the deadline). With `command_line` false the one part that takes the target's
// mmap lock is skipped (stat, status, cgroup, task and wchan do not take it).
Result<ProcessInfo> read_process_here(const ProcFs::State& state, Pid pid, bool command_line,
                                      ReadProgress* progress = nullptr) {
  const std::string name = std::to_string(pid);
  const std::string where = state.root + "/" + name;
  UniqueFd dir(::openat(state.root_fd.get(), name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return errno_error("open " + where);

  std::string text;
  if (!read_file_at(dir.get(), "stat", text)) return errno_error("read " + where + "/stat");
  auto stat = parse_stat(text);
  if (!stat.ok()) return Error{0, where + "/" + stat.error().context};

  ProcessInfo info;
  info.pid = stat->pid;
  info.ppid = stat->ppid;
  info.pgid = stat->pgid;
  info.sid = stat->sid;
  info.state = stat->state;
  info.comm = std::move(stat->comm);
  info.start_ticks = stat->start_ticks;
  info.cpu_ticks = stat->cpu_ticks;
  info.rss_pages = stat->rss_pages;
  if (progress != nullptr) progress->start_ticks = stat->start_ticks;
  info.kernel_thread = (stat->flags & kPfKthread) != 0;
  if (state.boot_time) {
    info.start_time =
        static_cast<double>(*state.boot_time) +
        static_cast<double>(stat->start_ticks) / static_cast<double>(state.clock_ticks);
  }

  if (read_file_at(dir.get(), "status", text)) {
    StatusFields status = parse_status(text);
    info.uid = status.euid;
    info.nspid = std::move(status.nspid);
  }
  if (read_file_at(dir.get(), "cgroup", text)) {
    info.cgroup = parse_cgroup_v2(text);
    info.owner = owner_from_cgroup_file(text, state.trusted_cgroup_prefix);
    info.freezer_cgroup = parse_cgroup_v1_freezer(text);  // procfs/blocked.h: frozen or not
  }

  UniqueFd task(::openat(dir.get(), "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (task) {
    if (auto tids = numeric_entries(task.get(), where + "/task"); tids.ok()) {
      // Leader first, then the others ascending.
      info.threads.push_back(read_thread(task.get(), pid));
      for (Pid tid : *tids) {
        if (tid != pid) info.threads.push_back(read_thread(task.get(), tid));
      }
    }
  }
  if (command_line) read_command_line(dir.get(), info, progress);
  // The process may have exited while we read; a half-read record of a process that is gone
  // must not be reported as a live one.
  if (::faccessat(dir.get(), "stat", F_OK, 0) != 0 && (errno == ENOENT || errno == ESRCH)) {
    return Error{ESRCH, "read " + where};
  }
  return info;
}

bool pid_seen_locked(ProcFs::State& state, Pid pid) {
  const std::lock_guard lock(state.locked_mutex);
  auto it = state.locked.lower_bound({pid, 0});
  return it != state.locked.end() && it->first.first == pid;
}

// Whether (pid, start) is known to be locked still. An entry whose blocked read has returned
// is dropped: the lock was released, the process reads normally again.
bool known_locked(ProcFs::State& state, Pid pid, std::uint64_t start_ticks) {
  const std::lock_guard lock(state.locked_mutex);
  auto it = state.locked.find({pid, start_ticks});
  if (it == state.locked.end()) return false;
  if (it->second->load()) {
    state.locked.erase(it);
    return false;
  }
  return true;
}

// pid's start time from its stat (which never takes the mmap lock), to tell a locked process
// from a later one with its PID.
std::optional<std::uint64_t> start_ticks_of(const ProcFs::State& state, Pid pid) {
  auto text = read_file_at(state.root_fd.get(), std::to_string(pid) + "/stat");
  if (!text.ok()) return std::nullopt;
  auto stat = parse_stat(*text);
  if (!stat.ok()) return std::nullopt;
  return stat->start_ticks;
}

bool any_thread_in_d(const ProcessInfo& info) {
  return info.state == 'D' || std::any_of(info.threads.begin(), info.threads.end(),
                                          [](const ThreadInfo& t) { return t.state == 'D'; });
}

void remember_locked(ProcFs::State& state, Pid pid, std::uint64_t start,
                     std::shared_ptr<std::atomic<bool>> returned) {
  const std::lock_guard lock(state.locked_mutex);
  state.locked[{pid, start}] = std::move(returned);
}

// A read that did not come in time. Read again here without the command line. It is a locked
// memory map only when the read was waiting in the command line, on the same process (same
// start time: not a later one with the PID), and a thread of it is in D — whoever holds the
// mmap lock while waiting is, as is a writer queued for it. Anything else was merely slow
// (a busy machine): no command line, but not stuck (found in review: slowness alone must
// not make a healthy job a kill target).
Result<ProcessInfo> read_overdue(ProcFs::State& state, Pid pid, const ReadProgress& progress) {
  auto info = read_process_here(state, pid, /*command_line=*/false);
  if (!info.ok()) return info;
  const std::uint64_t started = progress.start_ticks.load();
  if (started != 0 && info->start_ticks != started) {
    return Error{ESRCH, "read " + state.root + "/" + std::to_string(pid) + ": exited"};
  }
  if (progress.in_memory_read.load() && any_thread_in_d(*info)) {
    info->memory_map_locked = true;
    remember_locked(state, pid, info->start_ticks, progress.returned);
  }
  return info;
}

// A process already known to be locked: everything but its command line.
Result<ProcessInfo> read_known_locked(const ProcFs::State& state, Pid pid) {
  auto info = read_process_here(state, pid, /*command_line=*/false);
  if (info.ok()) info->memory_map_locked = true;
  return info;
}

}  // namespace

Result<ProcessInfo> ProcFs::read_process(Pid pid) const {
  return std::move(read_processes({pid}).front());
}

std::vector<Result<ProcessInfo>> ProcFs::read_processes(const std::vector<Pid>& pids) const {
  // Known-locked processes are read here without their command line; the rest on workers.
  std::vector<std::optional<Result<ProcessInfo>>> ready(pids.size());
  std::vector<std::size_t> to_read;
  for (std::size_t i = 0; i < pids.size(); ++i) {
    if (memory_map_locked(pids[i])) {
      ready[i] = read_known_locked(*state_, pids[i]);
      continue;
    }
    to_read.push_back(i);
  }

  // Results live in storage the workers share: a worker left blocked writes its slot later.
  struct Batch {
    std::shared_ptr<State> state;
    std::vector<Pid> pids;
    std::vector<std::optional<Result<ProcessInfo>>> results;
    std::vector<ReadProgress> progress;
  };
  auto batch = std::make_shared<Batch>();
  batch->state = state_;
  for (std::size_t i : to_read) batch->pids.push_back(pids[i]);
  batch->results.resize(batch->pids.size());
  batch->progress = std::vector<ReadProgress>(batch->pids.size());
  const std::vector<std::size_t> overdue = run_with_deadline(
      batch->pids.size(),
      {.threads = reader_threads(batch->pids.size()), .deadline = state_->read_deadline},
      [batch](std::size_t i) {
        ReadProgress& progress = batch->progress[i];
        batch->results[i] = read_process_here(*batch->state, batch->pids[i], true, &progress);
        *progress.returned = true;
      });
  std::size_t next_overdue = 0;
  for (std::size_t k = 0; k < to_read.size(); ++k) {
    if (next_overdue < overdue.size() && overdue[next_overdue] == k) {
      ++next_overdue;
      ready[to_read[k]] = read_overdue(*state_, pids[to_read[k]], batch->progress[k]);
    } else {
      ready[to_read[k]] = std::move(*batch->results[k]);
    }
  }
  std::vector<Result<ProcessInfo>> out;
  out.reserve(pids.size());
  for (auto& r : ready) {
    if (r->ok() && (*r)->uid) (*r)->user = state_->users.name(*(*r)->uid);
    out.push_back(std::move(*r));
  }
  return out;
}

bool ProcFs::memory_map_locked(Pid pid) const {
  if (!pid_seen_locked(*state_, pid)) return false;  // the common case: no stat read
  const auto start = start_ticks_of(*state_, pid);
  return start && known_locked(*state_, pid, *start);
}

bool ProcFs::note_memory_map_locked(Pid pid, std::shared_ptr<std::atomic<bool>> returned) const {
  auto info = read_process_here(*state_, pid, /*command_line=*/false);
  if (!info.ok() || !any_thread_in_d(*info)) return false;
  remember_locked(*state_, pid, info->start_ticks, std::move(returned));
  return true;
}

EnvironmentValue environ_value(std::string_view text, std::string_view name, bool whole) {
  EnvironmentValue out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\0', at);
    const std::string_view entry =
        text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
      // The first entry of the name is getenv's. One cut at the cap may be longer.
      if (end == std::string_view::npos && !whole) return out;
      out.read = true;
      out.value = std::string(entry.substr(name.size() + 1));
      return out;
    }
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  out.read = whole;  // unset, unless it may be past the cut
  return out;
}

namespace {

// pid's environ text, at most kEnvironMax + 1 bytes, when pid is still the process started at
// `start` (its stat, read through the same directory fd, says so: the fd pins the process, so a
// PID handed on since fails the environ read too). nullopt when not, when it cannot be read, or
// when it is empty: a zombie's or a kernel thread's memory map is gone, which says nothing of
// the environment it had.
std::optional<std::string> read_environ(const ProcFs::State& state, Pid pid, std::uint64_t start,
                                        ReadProgress& progress) {
  const std::string name = std::to_string(pid);
  UniqueFd dir(::openat(state.root_fd.get(), name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return std::nullopt;
  std::string text;
  if (!read_file_at(dir.get(), "stat", text)) return std::nullopt;
  auto stat = parse_stat(text);
  if (!stat.ok() || stat->start_ticks != start) return std::nullopt;
  progress.start_ticks = start;
  progress.in_memory_read = true;  // environ takes the mmap lock, as cmdline does
  const bool got = read_file_at(dir.get(), "environ", text, kEnvironMax + 1);
  progress.in_memory_read = false;
  if (!got || text.empty()) return std::nullopt;
  return text;
}

}  // namespace

std::vector<EnvironmentValue> ProcFs::environment_values(
    const std::vector<std::pair<Pid, std::uint64_t>>& processes, std::string_view name) const {
  // Results live in storage the workers share: a worker left blocked writes its slot later.
  struct Batch {
    std::shared_ptr<State> state;
    std::vector<std::pair<Pid, std::uint64_t>> processes;
    std::vector<std::optional<std::string>> texts;
    std::vector<ReadProgress> progress;
  };
  auto batch = std::make_shared<Batch>();
  batch->state = state_;
  std::vector<std::size_t> place;  // batch item → its index in `processes`
  for (std::size_t i = 0; i < processes.size(); ++i) {
    if (known_locked(*state_, processes[i].first, processes[i].second)) continue;
    batch->processes.push_back(processes[i]);
    place.push_back(i);
  }
  const std::size_t n = batch->processes.size();
  batch->texts.resize(n);
  batch->progress = std::vector<ReadProgress>(n);
  // A worker each (a handful at most): locked processes cost one deadline together.
  constexpr std::size_t kMaxThreads = 16;
  const std::vector<std::size_t> overdue = run_with_deadline(
      n,
      {.threads = static_cast<unsigned>(std::clamp<std::size_t>(n, 1, kMaxThreads)),
       .deadline = state_->read_deadline},
      [batch](std::size_t i) {
        ReadProgress& progress = batch->progress[i];
        batch->texts[i] = read_environ(*batch->state, batch->processes[i].first,
                                       batch->processes[i].second, progress);
        *progress.returned = true;
      });
  std::vector<EnvironmentValue> out(processes.size());
  std::size_t next_overdue = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const auto [pid, start] = batch->processes[k];
    if (next_overdue < overdue.size() && overdue[next_overdue] == k) {
      ++next_overdue;
      // Not waited on again while a thread of it sits in D (a locked map, not a slow read).
      if (batch->progress[k].in_memory_read.load() && start_ticks(pid) == start) {
        note_memory_map_locked(pid, batch->progress[k].returned);
      }
      continue;
    }
    if (const std::optional<std::string>& text = batch->texts[k]) {
      out[place[k]] = environ_value(*text, name, text->size() <= kEnvironMax);
    }
  }
  return out;
}

std::optional<std::uint64_t> ProcFs::start_ticks(Pid pid) const {
  return start_ticks_of(*state_, pid);
}

std::optional<Pid> ProcFs::thread_group_of(Pid id) const {
  auto text = read_file_at(root_fd(), std::to_string(id) + "/status");
  if (!text.ok()) return std::nullopt;
  const std::optional<Pid> tgid = parse_status(*text).tgid;
  if (!tgid || *tgid <= 0 || *tgid == id) return std::nullopt;
  return tgid;
}

std::optional<std::uint32_t> ProcFs::fd_flags(Pid pid, std::optional<Pid> tid, int fd) const {
  auto text = fd_info(pid, tid, fd);
  if (!text) return std::nullopt;
  return parse_fdinfo_flags(*text);
}

std::optional<std::string> ProcFs::fd_info(Pid pid, std::optional<Pid> tid, int fd) const {
  std::string path = std::to_string(pid);
  if (tid) path += "/task/" + std::to_string(*tid);
  path += "/fdinfo/" + std::to_string(fd);
  if (auto text = read_file_at(root_fd(), path); text.ok()) return std::move(*text);
  return std::nullopt;
}

}  // namespace gpuclean::procfs
