#include "procfs/holder_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstring>
#include <string_view>
#include <thread>

#include "core/deadline_pool.h"
#include "procfs/parse.h"

namespace gpuclean::procfs {
namespace {

constexpr std::size_t kDeniedSampleSize = 5;
constexpr std::size_t kMaxMapsBytes = 64u << 20;  // a huge address space still ends somewhere

// Looks up a path among the selected files: a sorted vector beats hashing for the handful of
// device files, and every candidate is first cut by its first byte ('/').
class FileMatcher {
 public:
  explicit FileMatcher(const std::vector<DeviceFile>& files) : files_(files) {}

  [[nodiscard]] std::optional<std::size_t> find(std::string_view path) const {
    auto it = std::lower_bound(files_.begin(), files_.end(), path,
                               [](const DeviceFile& f, std::string_view p) { return f.path < p; });
    if (it == files_.end() || it->path != path) return std::nullopt;
    return static_cast<std::size_t>(it - files_.begin());
  }
  [[nodiscard]] const DeviceFile& file(std::size_t index) const { return files_[index]; }

 private:
  const std::vector<DeviceFile>& files_;
};

// How reading one /proc directory went. Vanishing and denial are normal, never errors.
enum class Open { kOk, kVanished, kDenied };

Open open_result(int err) {
  return (err == EACCES || err == EPERM) ? Open::kDenied : Open::kVanished;
}

// What scanning one process found.
struct PidScan {
  bool vanished = false;
  bool denied = false;
  FileHolding holding;  // files empty: holds none of them
};

// Scans one process at a time; a fresh one per process (it is a few pointers: the buffer that
// is worth keeping, maps_, is per thread).
class Worker {
 public:
  Worker(const FileMatcher& matcher, int root_fd) : matcher_(matcher), root_fd_(root_fd) {}

  // Its descriptor tables and its maps; `in_maps` is set while a maps read is under way.
  PidScan scan(Pid pid, std::atomic<bool>* in_maps);
  // Its descriptor tables only: they never wait on the process's mmap lock, its maps may.
  PidScan scan_fds_only(Pid pid);

 private:
  PidScan scan_process(Pid pid, bool maps, std::atomic<bool>* in_maps = nullptr);
  // Reads the fd table under dir_fd/"fd" into current_; entries counts descriptors seen.
  Open scan_fd_table(int dir_fd, std::optional<Pid> via_thread, std::size_t& entries);
  Open scan_maps(int dir_fd);
  // Finds the first non-leader thread of a zombie-led group whose fd table is not empty.
  Open scan_threads(int pid_dir_fd, Pid pid, bool maps, std::atomic<bool>* in_maps);
  HeldFile& held(std::size_t file_index);

  const FileMatcher& matcher_;
  const int root_fd_;
  FileHolding current_;
  std::vector<std::size_t> current_index_;  // file index of each entry in current_.files
};

// The maps buffer, kept per thread: a maps file runs to hundreds of KiB.
thread_local std::string maps_buffer;

HeldFile& Worker::held(std::size_t file_index) {
  for (std::size_t i = 0; i < current_index_.size(); ++i) {
    if (current_index_[i] == file_index) return current_.files[i];
  }
  current_index_.push_back(file_index);
  HeldFile& file = current_.files.emplace_back();
  file.path = matcher_.file(file_index).path;
  file.nvidia_minor = matcher_.file(file_index).nvidia_minor;
  return file;
}

Open Worker::scan_fd_table(int dir_fd, std::optional<Pid> via_thread, std::size_t& entries) {
  entries = 0;
  const int fd_dir = ::openat(dir_fd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_dir < 0) return open_result(errno);
  DIR* dir = ::fdopendir(fd_dir);
  if (dir == nullptr) {
    ::close(fd_dir);
    return Open::kVanished;
  }
  char target[PATH_MAX];
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    ++entries;
    const ssize_t length = ::readlinkat(fd_dir, entry->d_name, target, sizeof(target));
    // Most descriptors are pipes, sockets and anon inodes: not paths, cut at the first byte.
    if (length <= 0 || target[0] != '/') continue;
    const LinkTarget link =
        split_deleted(std::string_view(target, static_cast<std::size_t>(length)));
    auto index = matcher_.find(link.path);
    if (!index) continue;
    int fd_number = 0;
    std::from_chars(entry->d_name, entry->d_name + std::strlen(entry->d_name), fd_number);
    HeldFile& file = held(*index);
    file.fds.push_back(fd_number);
    file.deleted = file.deleted || link.deleted;
    if (via_thread) file.via_thread = via_thread;
  }
  ::closedir(dir);
  return Open::kOk;
}

Open Worker::scan_maps(int dir_fd) {
  if (!read_file_at(dir_fd, "maps", maps_buffer, kMaxMapsBytes)) return open_result(errno);
  std::string_view text(maps_buffer);
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const std::string_view path = maps_line_path(line);
    if (path.empty()) continue;
    const LinkTarget link = split_deleted(path);
    if (auto index = matcher_.find(link.path)) {
      HeldFile& file = held(*index);
      file.mapped = true;
      file.deleted = file.deleted || link.deleted;
    }
  }
  return Open::kOk;
}

Open Worker::scan_threads(int pid_dir_fd, Pid pid, bool maps, std::atomic<bool>* in_maps) {
  const int task_fd = ::openat(pid_dir_fd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (task_fd < 0) return open_result(errno);
  DIR* dir = ::fdopendir(task_fd);
  if (dir == nullptr) {
    ::close(task_fd);
    return Open::kVanished;
  }
  Open result = Open::kOk;
  char own[16];
  *std::to_chars(own, own + sizeof(own) - 1, pid).ptr = '\0';
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.' || std::strcmp(entry->d_name, own) == 0) continue;
    const int tid_fd = ::openat(task_fd, entry->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (tid_fd < 0) continue;  // that thread just exited; try the next
    Pid tid = 0;
    std::from_chars(entry->d_name, entry->d_name + std::strlen(entry->d_name), tid);
    std::size_t entries = 0;
    const Open fds = scan_fd_table(tid_fd, tid, entries);
    if (fds == Open::kOk && entries > 0) {
      // The group's fd table and mm are shared by its live threads: one thread tells all.
      if (maps) {
        if (in_maps != nullptr) *in_maps = true;
        scan_maps(tid_fd);
        if (in_maps != nullptr) *in_maps = false;
      }
      ::close(tid_fd);
      break;
    }
    if (fds == Open::kDenied) result = Open::kDenied;
    ::close(tid_fd);
  }
  ::closedir(dir);
  return result;
}

PidScan Worker::scan(Pid pid, std::atomic<bool>* in_maps) {
  return scan_process(pid, true, in_maps);
}

PidScan Worker::scan_fds_only(Pid pid) {
  return scan_process(pid, false);
}

PidScan Worker::scan_process(Pid pid, bool maps, std::atomic<bool>* in_maps) {
  PidScan result;
  char name[16];
  *std::to_chars(name, name + sizeof(name) - 1, pid).ptr = '\0';
  const int pid_fd = ::openat(root_fd_, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (pid_fd < 0) {
    result.denied = open_result(errno) == Open::kDenied;
    result.vanished = !result.denied;
    return result;
  }
  current_.pid = pid;
  current_.files.clear();
  current_index_.clear();

  std::size_t entries = 0;
  Open fds = scan_fd_table(pid_fd, std::nullopt, entries);
  if (fds == Open::kOk && entries == 0) {
    // Empty table: a kernel thread, a process with every fd closed, or a zombie leader whose
    // other threads still hold the group's files (docs/facts.md: fuser and lsof miss these).
    fds = scan_threads(pid_fd, pid, maps, in_maps);
  }
  if (in_maps != nullptr) *in_maps = true;
  const Open mapped = maps ? scan_maps(pid_fd) : Open::kOk;
  if (in_maps != nullptr) *in_maps = false;
  ::close(pid_fd);

  result.denied = fds == Open::kDenied || mapped == Open::kDenied;
  result.vanished = !result.denied && fds == Open::kVanished && current_.files.empty();
  result.holding = std::move(current_);
  current_ = FileHolding{};
  return result;
}

// One thread per core, at most 16 (the kernel's per-process locks limit scaling well before
// that), and none beyond one per ~64 processes: a thread costs tens of microseconds to start.
unsigned auto_threads(std::size_t processes) {
  constexpr std::size_t kMinPidsPerThread = 64;
  constexpr unsigned kMaxThreads = 16;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const auto useful =
      static_cast<unsigned>(std::max<std::size_t>(1, processes / kMinPidsPerThread));
  return std::min({cores, kMaxThreads, useful});
}

}  // namespace

HolderScan scan_holders(const ProcFs& proc, const std::vector<DeviceFile>& files,
                        const ScanOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  HolderScan result;
  auto pids = options.only ? Result<std::vector<Pid>>(*options.only) : proc.list_pids();
  if (!pids.ok()) return result;

  // Everything a worker touches belongs to the job: a worker left blocked on a locked memory
  // map (core/deadline_pool.h) may finish after this function has returned.
  struct Job {
    Job(ProcFs p, std::vector<DeviceFile> f, std::vector<Pid> all)
        : proc(std::move(p)),
          files(std::move(f)),
          matcher(files),
          pids(std::move(all)),
          scans(pids.size()),
          in_maps(pids.size()),
          returned(pids.size()) {
      for (auto& r : returned) r = std::make_shared<std::atomic<bool>>(false);
    }
    ProcFs proc;
    std::vector<DeviceFile> files;
    FileMatcher matcher;
    std::vector<Pid> pids;
    std::vector<PidScan> scans;
    std::vector<std::atomic<bool>> in_maps;  // the maps read (takes the mmap lock) is under way
    std::vector<std::shared_ptr<std::atomic<bool>>> returned;  // the scan of it has returned
  };
  auto job = std::make_shared<Job>(proc, files, std::move(pids).value());
  const unsigned thread_count =
      options.threads > 0 ? options.threads : auto_threads(job->pids.size());
  const std::vector<std::size_t> overdue = run_with_deadline(
      job->pids.size(), {.threads = thread_count, .deadline = proc.read_deadline()},
      [job](std::size_t i) {
        const Pid pid = job->pids[i];
        Worker worker(job->matcher, job->proc.root_fd());
        // Found locked before and still blocked: its maps would only wait again (one thread
        // left behind per pass of `wait` or per scrape, found in review).
        if (job->proc.memory_map_locked(pid)) {
          job->scans[i] = worker.scan_fds_only(pid);
        } else {
          job->scans[i] = worker.scan(pid, &job->in_maps[i]);
        }
        *job->returned[i] = true;
      });

  ScanStats& stats = result.stats;
  stats.processes = job->pids.size();
  auto note_denied = [&stats](Pid pid) {
    ++stats.denied;
    if (stats.denied_pids.size() < kDeniedSampleSize) stats.denied_pids.push_back(pid);
  };
  std::size_t next_overdue = 0;
  for (std::size_t i = 0; i < job->pids.size(); ++i) {
    PidScan scan;
    if (next_overdue < overdue.size() && overdue[next_overdue] == i) {
      ++next_overdue;
      // Its maps did not answer (with a thread in D: locked; else merely slow). What it holds
      // through descriptors can still be read: they never take the mmap lock.
      const Pid pid = job->pids[i];
      if (job->in_maps[i].load() && proc.note_memory_map_locked(pid, job->returned[i])) {
        stats.locked_pids.push_back(pid);
      }
      scan = Worker(job->matcher, proc.root_fd()).scan_fds_only(pid);
    } else {
      scan = std::move(job->scans[i]);
    }
    if (scan.denied) note_denied(job->pids[i]);
    if (scan.vanished) ++stats.vanished;
    if (!scan.holding.files.empty()) result.holdings.push_back(std::move(scan.holding));
  }
  result.stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

bool still_holds(const ProcFs& proc, Pid pid, const std::vector<HeldFile>& files) {
  if (files.empty()) return false;
  char target[PATH_MAX];
  for (const HeldFile& file : files) {
    if (file.fds.empty()) return false;  // held through its maps alone
    // A zombie-led group's table is read through the thread that showed it.
    const std::string table = std::to_string(pid) +
                              (file.via_thread ? "/task/" + std::to_string(*file.via_thread) : "") +
                              "/fd/";
    for (int fd : file.fds) {
      const std::string link = table + std::to_string(fd);
      const ssize_t length = ::readlinkat(proc.root_fd(), link.c_str(), target, sizeof(target));
      if (length <= 0) return false;
      const LinkTarget now =
          split_deleted(std::string_view(target, static_cast<std::size_t>(length)));
      if (now.path != file.path || now.deleted != file.deleted) return false;
    }
  }
  return true;
}

void fill_access(const ProcFs& proc, FileHolding& holding) {
  for (HeldFile& file : holding.files) {
    for (int fd : file.fds) {
      auto flags = proc.fd_flags(holding.pid, file.via_thread, fd);
      if (!flags) continue;
      const std::uint32_t mode = *flags & O_ACCMODE;
      file.readable = file.readable || mode == O_RDONLY || mode == O_RDWR;
      file.writable = file.writable || mode == O_WRONLY || mode == O_RDWR;
    }
  }
}

}  // namespace gpuclean::procfs
