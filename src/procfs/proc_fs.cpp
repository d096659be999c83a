#include "procfs/proc_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <string>

#include "procfs/parse.h"
#include "procfs/user_names.h"

namespace gpuclean::procfs {
namespace {

std::optional<Pid> parse_pid_name(const char* name) {
  Pid pid = 0;
  const char* end = name + std::char_traits<char>::length(name);
  auto [ptr, ec] = std::from_chars(name, end, pid);
  if (ec != std::errc{} || ptr != end || pid <= 0) return std::nullopt;
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

bool read_file_at(int dir_fd, const char* name, std::string& out, std::size_t max_bytes) {
  out.clear();
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  constexpr std::size_t kChunk = 16384;
  while (out.size() < max_bytes) {
    const std::size_t old_size = out.size();
    const std::size_t want = std::min(kChunk, max_bytes - old_size);
    out.resize(old_size + want);
    const ssize_t got = ::read(fd, out.data() + old_size, want);
    if (got < 0) {
      if (errno == EINTR) {
        out.resize(old_size);
        continue;
      }
      const int saved = errno;
      ::close(fd);
      out.clear();
      errno = saved;
      return false;
    }
    out.resize(old_size + static_cast<std::size_t>(got));
    if (got == 0) break;
  }
  ::close(fd);
  return true;
}

Result<ProcFs> ProcFs::open(const std::string& root) {
  UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return errno_error("open " + root);
  std::string stat;
  std::optional<std::int64_t> boot;
  if (read_file_at(fd.get(), "stat", stat)) boot = parse_btime(stat);
  ProcFs proc(root, std::move(fd), boot);
  const long ticks = ::sysconf(_SC_CLK_TCK);
  if (ticks > 0) proc.clock_ticks_ = ticks;
  return proc;
}

Result<std::vector<Pid>> ProcFs::list_pids() const {
  return numeric_entries(root_fd(), root_);
}

Result<ProcessInfo> ProcFs::read_process(Pid pid) const {
  const std::string name = std::to_string(pid);
  const std::string where = root_ + "/" + name;
  UniqueFd dir(::openat(root_fd(), name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
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
  info.kernel_thread = (stat->flags & kPfKthread) != 0;
  if (boot_time_) {
    info.start_time = static_cast<double>(*boot_time_) +
                      static_cast<double>(stat->start_ticks) / static_cast<double>(clock_ticks_);
  }

  if (read_file_at(dir.get(), "status", text)) {
    StatusFields status = parse_status(text);
    info.uid = status.euid;
    info.nspid = std::move(status.nspid);
  }
  if (info.uid) info.user = users_->name(*info.uid);
  if (read_file_at(dir.get(), "cmdline", text)) info.cmdline = parse_cmdline(text);
  if (read_file_at(dir.get(), "cgroup", text)) info.cgroup = parse_cgroup_v2(text);

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
  // The process may have exited while we read; a half-read record of a process that is gone
  // must not be reported as a live one.
  if (::faccessat(dir.get(), "stat", F_OK, 0) != 0 && (errno == ENOENT || errno == ESRCH)) {
    return Error{ESRCH, "read " + where};
  }
  return info;
}

std::optional<std::uint32_t> ProcFs::fd_flags(Pid pid, std::optional<Pid> tid, int fd) const {
  std::string path = std::to_string(pid);
  if (tid) path += "/task/" + std::to_string(*tid);
  path += "/fdinfo/" + std::to_string(fd);
  std::string text;
  if (!read_file_at(root_fd(), path.c_str(), text)) return std::nullopt;
  return parse_fdinfo_flags(text);
}

}  // namespace gpuclean::procfs
