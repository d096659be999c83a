#include "procfs/holder_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "core/deadline_pool.h"
#include "core/left_behind.h"
#include "procfs/capabilities.h"
#include "procfs/drm_fdinfo.h"
#include "procfs/file_identity.h"
#include "procfs/parse.h"

namespace gpuclean::procfs {
namespace {

constexpr std::size_t kSampleSize = 5;

// Finds the selected file a descriptor or mapping *is* (docs/reference.md, "A holder is found
// by what it holds"): by identity, through sorted keys (a --device-glob of /dev/* selects
// hundreds of files).
class FileMatcher {
 public:
  explicit FileMatcher(const std::vector<DeviceFile>& files) : files_(files) {
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (!files[i].identity) continue;
      const FileIdentity& id = *files[i].identity;
      by_identity_.emplace_back(key_of(id), i);
      // A maps line names the mapped inode: for a device node, the node's own inode.
      by_inode_.emplace_back(Key{0, id.dev, id.ino}, i);
      has_device_nodes_ = has_device_nodes_ || id.kind != FileIdentity::Kind::kOther;
    }
    std::sort(by_identity_.begin(), by_identity_.end());
    std::sort(by_inode_.begin(), by_inode_.end());
  }

  [[nodiscard]] std::optional<std::size_t> find(const FileIdentity& id) const {
    return lookup(by_identity_, key_of(id));
  }
  // The selected file whose own inode is (dev, ino), as a maps line names a mapped file.
  [[nodiscard]] std::optional<std::size_t> find_inode(std::uint64_t dev, std::uint64_t ino) const {
    return lookup(by_inode_, {0, dev, ino});
  }
  // Whether a mapping's inode can be another path to a selected file: only device nodes have
  // other inodes that are the same thing (a second node); a regular file's inode is itself.
  [[nodiscard]] bool has_device_nodes() const { return has_device_nodes_; }
  [[nodiscard]] const DeviceFile& file(std::size_t index) const { return files_[index]; }

 private:
  using Key = std::tuple<int, std::uint64_t, std::uint64_t>;
  static Key key_of(const FileIdentity& id) {
    if (id.kind == FileIdentity::Kind::kOther) return {0, id.dev, id.ino};
    return {static_cast<int>(id.kind) + 1, id.rdev_major, id.rdev_minor};
  }
  static std::optional<std::size_t> lookup(const std::vector<std::pair<Key, std::size_t>>& keys,
                                           const Key& key) {
    auto it = std::lower_bound(keys.begin(), keys.end(), key,
                               [](const auto& entry, const Key& k) { return entry.first < k; });
    if (it == keys.end() || it->first != key) return std::nullopt;
    return it->second;
  }

  const std::vector<DeviceFile>& files_;
  std::vector<std::pair<Key, std::size_t>> by_identity_;
  std::vector<std::pair<Key, std::size_t>> by_inode_;
  bool has_device_nodes_ = false;
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
  bool denied_other_user = false;  // denied, and owned by another user than the scanner
  bool map_files_read = false;     // a mapping was checked through map_files
  FileHolding holding;             // files empty: holds none of them
};

// What a mapped inode turned out to be, per scan and thread: most processes map the same
// libraries, so each (dev, ino) costs one map_files stat per thread, not one per process.
struct InodeKey {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  bool operator==(const InodeKey& other) const = default;
};
struct InodeKeyHash {
  std::size_t operator()(const InodeKey& k) const noexcept {
    return std::hash<std::uint64_t>()(k.dev * 0x9E3779B97F4A7C15ull ^ k.ino);
  }
};
struct MappedInodes {
  std::uint64_t scan = 0;  // which scan the entries belong to (inode numbers get reused)
  std::unordered_map<InodeKey, std::optional<std::size_t>, InodeKeyHash> selected;
};
thread_local MappedInodes mapped_inodes;

// The maps read buffer, kept per thread.
std::string& maps_buffer() {
  thread_local std::string buffer;
  return buffer;
}
std::atomic<std::uint64_t> scan_counter{0};

// Scans one process at a time; a fresh one per process (it is a few pointers: what is worth
// keeping, the maps buffer and the mapped inodes, is per thread).
class Worker {
 public:
  Worker(const FileMatcher& matcher, int root_fd, std::uint64_t scan_id)
      : matcher_(matcher), root_fd_(root_fd), scan_id_(scan_id) {}

  // Its descriptor tables and its maps; `in_maps` is set while a maps read is under way.
  PidScan scan(Pid pid, std::atomic<bool>* in_maps);
  // Its descriptor tables only: they never wait on the process's mmap lock, its maps may.
  PidScan scan_fds_only(Pid pid);

 private:
  PidScan scan_process(Pid pid, bool maps, std::atomic<bool>* in_maps = nullptr);
  // Reads the fd table under dir_fd/"fd" into current_; entries counts descriptors seen.
  Open scan_fd_table(int dir_fd, std::optional<Pid> via_thread, std::size_t& entries);
  Open scan_maps(int dir_fd);
  void match_mapping(int dir_fd, const MapsLine& line);
  std::optional<std::size_t> mapped_selected_file(int dir_fd, const MapsLine& line);
  // Finds the first non-leader thread of a zombie-led group whose fd table is not empty.
  Open scan_threads(int pid_dir_fd, Pid pid, bool maps, std::atomic<bool>* in_maps);
  HeldFile& held(std::size_t file_index);
  // Records the path the holder reached a selected file by, when it is not the file's own.
  static void note_path(HeldFile& file, std::string_view shown);

  const FileMatcher& matcher_;
  const int root_fd_;
  const std::uint64_t scan_id_;
  FileHolding current_;
  std::vector<std::size_t> current_index_;  // file index of each entry in current_.files
  int map_files_fd_ = -1;                   // dir_fd/map_files, opened on first need
  bool map_files_denied_ = false;
  bool map_files_read_ = false;
};

HeldFile& Worker::held(std::size_t file_index) {
  for (std::size_t i = 0; i < current_index_.size(); ++i) {
    if (current_index_[i] == file_index) return current_.files[i];
  }
  current_index_.push_back(file_index);
  HeldFile& file = current_.files.emplace_back();
  file.path = matcher_.file(file_index).path;
  file.nvidia_minor = matcher_.file(file_index).nvidia_minor;
  file.identity = matcher_.file(file_index).identity;
  file.drm = matcher_.file(file_index).drm;
  return file;
}

void Worker::note_path(HeldFile& file, std::string_view shown) {
  const LinkTarget link = split_deleted(shown);
  file.deleted = file.deleted || link.deleted;
  if (!link.path.empty() && link.path != file.path && !file.opened_as) {
    file.opened_as = std::string(link.path);
  }
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
  bool refused = false;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    ++entries;
    // The open file itself, not its link's text: one statx per descriptor, as fuser's stat.
    const std::optional<FileIdentity> id = identity_at(fd_dir, entry->d_name);
    if (!id) {
      // A table listed but its descriptors refused (EACCES: root without CAP_SYS_PTRACE, as in
      // a container with Docker's default capabilities): unseen, never "closed meanwhile".
      if (errno == EACCES || errno == EPERM) refused = true;
      continue;
    }
    auto index = matcher_.find(*id);
    if (!index) continue;
    int fd_number = 0;
    std::from_chars(entry->d_name, entry->d_name + std::strlen(entry->d_name), fd_number);
    HeldFile& file = held(*index);
    file.fds.push_back(fd_number);
    if (via_thread) file.via_thread = via_thread;
    // The text only for the holders: what to show, and whether it was deleted.
    const ssize_t length = ::readlinkat(fd_dir, entry->d_name, target, sizeof(target));
    if (length > 0) note_path(file, std::string_view(target, static_cast<std::size_t>(length)));
  }
  ::closedir(dir);
  return refused ? Open::kDenied : Open::kOk;
}

std::optional<std::size_t> Worker::mapped_selected_file(int dir_fd, const MapsLine& line) {
  const std::uint64_t dev = makedev(line.dev_major, line.dev_minor);
  if (auto index = matcher_.find_inode(dev, line.inode)) return index;
  // Another inode can be a selected device only through a second node with its number. The
  // mapping itself says which device it is (map_files, root only); each inode once per scan.
  if (!matcher_.has_device_nodes() || map_files_denied_) return std::nullopt;
  if (mapped_inodes.scan != scan_id_) {
    mapped_inodes.scan = scan_id_;
    mapped_inodes.selected.clear();
  }
  const InodeKey key{dev, line.inode};
  if (auto it = mapped_inodes.selected.find(key); it != mapped_inodes.selected.end()) {
    return it->second;
  }
  if (map_files_fd_ < 0) {
    map_files_fd_ = ::openat(dir_fd, "map_files", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (map_files_fd_ < 0) {
      map_files_denied_ = errno == EACCES || errno == EPERM;
      return std::nullopt;
    }
  }
  const std::string name = map_files_name(line.range);
  const std::optional<FileIdentity> id = identity_at(map_files_fd_, name.c_str());
  if (!id) {
    // EPERM: map_files needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE). Anything else: the
    // mapping went away meanwhile; not cached.
    if (errno == EPERM || errno == EACCES) map_files_denied_ = true;
    return std::nullopt;
  }
  map_files_read_ = true;
  std::optional<std::size_t> index = matcher_.find(*id);
  mapped_inodes.selected.emplace(key, index);
  return index;
}

void Worker::match_mapping(int dir_fd, const MapsLine& line) {
  if (line.inode == 0) return;  // anonymous
  if (auto index = mapped_selected_file(dir_fd, line)) {
    HeldFile& file = held(*index);
    file.mapped = true;
    note_path(file, line.path);
  }
}

Open Worker::scan_maps(int dir_fd) {
  // Read in chunks and matched line by line: a process with tens of thousands of mappings of
  // long paths has a maps file of tens of MiB (docs/facts.md: 71 MiB), which a capped read
  // would cut — and a holder behind the cut would be missed. The read deadline bounds it.
  const int fd = ::openat(dir_fd, "maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return open_result(errno);
  constexpr std::size_t kChunk = std::size_t{64} * 1024;
  std::string& buffer = maps_buffer();
  buffer.resize(kChunk + PATH_MAX + 256);
  std::size_t kept = 0;  // bytes of an unfinished line at the buffer's start
  Open result = Open::kOk;
  for (;;) {
    if (buffer.size() - kept < kChunk) buffer.resize(kept + kChunk);
    const ssize_t got = ::read(fd, buffer.data() + kept, buffer.size() - kept);
    if (got < 0) {
      if (errno == EINTR) continue;
      result = open_result(errno);
      break;
    }
    const std::size_t filled = kept + static_cast<std::size_t>(got);
    std::string_view text(buffer.data(), filled);
    for (std::size_t nl = text.find('\n'); nl != std::string_view::npos; nl = text.find('\n')) {
      if (auto line = parse_maps_line(text.substr(0, nl))) match_mapping(dir_fd, *line);
      text.remove_prefix(nl + 1);
    }
    if (got == 0) {
      if (auto line = parse_maps_line(text)) match_mapping(dir_fd, *line);
      break;
    }
    kept = text.size();
    std::memmove(buffer.data(), text.data(), kept);
  }
  ::close(fd);
  if (map_files_fd_ >= 0) {
    ::close(map_files_fd_);
    map_files_fd_ = -1;
  }
  return result;
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

  if (!current_.files.empty()) {
    // Through the handle the files were found by: this process's start time, whatever gets
    // its PID after it exits (a stat read takes no lock of the target's).
    std::string stat;
    if (read_file_at(pid_fd, "stat", stat, 4096)) {
      if (auto fields = parse_stat(stat); fields.ok()) current_.start_ticks = fields->start_ticks;
    }
  }
  result.denied = fds == Open::kDenied || mapped == Open::kDenied;
  if (result.denied) {
    // Whose it is decides what a refusal means (diagnose/unseen.h): another user's process is
    // closed to a non-root scanner; root is refused only by a more privileged supervisor.
    struct stat st {};
    result.denied_other_user = ::fstat(pid_fd, &st) == 0 && st.st_uid != ::geteuid();
  }
  ::close(pid_fd);
  result.vanished = !result.denied && fds == Open::kVanished && current_.files.empty();
  result.map_files_read = map_files_read_;
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

// readable/writable from one descriptor's fdinfo text (its open flags).
void note_access(HeldFile& file, std::string_view fdinfo) {
  auto flags = parse_fdinfo_flags(fdinfo);
  if (!flags) return;
  const std::uint32_t mode = *flags & O_ACCMODE;
  file.readable = file.readable || mode == O_RDONLY || mode == O_RDWR;
  file.writable = file.writable || mode == O_WRONLY || mode == O_RDWR;
}

// Several descriptors of one process can be one client (dup, or the same file description
// passed back): a client id is listed once.
void add_drm_client(HeldFile& file, DrmClient client) {
  const bool seen =
      client.client_id &&
      std::any_of(file.drm_clients.begin(), file.drm_clients.end(), [&](const DrmClient& c) {
        return c.client_id == client.client_id && c.pdev == client.pdev;
      });
  if (!seen) file.drm_clients.push_back(std::move(client));
}

}  // namespace

HolderScan scan_holders(const ProcFs& proc, const std::vector<DeviceFile>& files,
                        const ScanOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  HolderScan result;
  result.stats.as_root = ::geteuid() == 0;
  result.stats.may_read_all = may_read_every_process();
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
    std::vector<bool> fds_only;  // scanned without its maps (found locked before)
    // The second pass, for the overdue ones: their descriptors alone (own slots: a first-pass
    // worker may still write its own slot late).
    std::vector<std::size_t> overdue;
    std::vector<PidScan> fallback;
    std::uint64_t scan_id = ++scan_counter;
  };
  auto job = std::make_shared<Job>(proc, files, std::move(pids).value());
  job->fds_only.assign(job->pids.size(), false);
  for (std::size_t i = 0; i < job->pids.size(); ++i) {
    // Found locked before and still blocked: its maps would only wait again (one thread left
    // behind per pass of `wait` or per scrape, found in review).
    job->fds_only[i] = proc.memory_map_locked(job->pids[i]);
  }
  const unsigned thread_count =
      options.threads > 0 ? options.threads : auto_threads(job->pids.size());
  job->overdue = run_with_deadline(
      job->pids.size(), {.threads = thread_count, .deadline = proc.read_deadline()},
      [job](std::size_t i) {
        const Pid pid = job->pids[i];
        Worker worker(job->matcher, job->proc.root_fd(), job->scan_id);
        job->scans[i] =
            job->fds_only[i] ? worker.scan_fds_only(pid) : worker.scan(pid, &job->in_maps[i]);
        *job->returned[i] = true;
      });
  // What the overdue ones hold through descriptors can still be read: descriptors never take
  // the mmap lock. But a descriptor's stat reaches its file system, which can hang too: the
  // same deadline, never the calling thread.
  job->fallback.resize(job->overdue.size());
  const std::vector<std::size_t> unanswered = run_with_deadline(
      job->overdue.size(),
      {.threads = std::max(
           1u, std::min<unsigned>(thread_count, static_cast<unsigned>(job->overdue.size()))),
       .deadline = proc.read_deadline()},
      [job](std::size_t k) {
        job->fallback[k] = Worker(job->matcher, job->proc.root_fd(), job->scan_id)
                               .scan_fds_only(job->pids[job->overdue[k]]);
      });

  ScanStats& stats = result.stats;
  stats.processes = job->pids.size();
  auto note_incomplete = [&result](Pid pid) {
    ++result.stats.incomplete;
    if (result.stats.incomplete_pids.size() < kSampleSize) {
      result.stats.incomplete_pids.push_back(pid);
    }
    result.not_read_fully.push_back(pid);
  };
  std::size_t next_overdue = 0;
  std::size_t next_unanswered = 0;
  for (std::size_t i = 0; i < job->pids.size(); ++i) {
    const Pid pid = job->pids[i];
    PidScan scan;
    if (next_overdue < job->overdue.size() && job->overdue[next_overdue] == i) {
      const std::size_t k = next_overdue++;
      // Its maps did not answer (with a thread in D: locked; else merely slow).
      if (job->in_maps[i].load() && proc.note_memory_map_locked(pid, job->returned[i])) {
        stats.locked_pids.push_back(pid);
      }
      note_incomplete(pid);
      if (next_unanswered < unanswered.size() && unanswered[next_unanswered] == k) {
        ++next_unanswered;
        continue;  // nothing of it answered: counted, nothing known
      }
      scan = std::move(job->fallback[k]);
    } else {
      scan = std::move(job->scans[i]);
      if (job->fds_only[i] && !scan.vanished && !scan.denied) note_incomplete(pid);
    }
    if (scan.denied) {
      if (result.not_read_fully.empty() || result.not_read_fully.back() != pid) {
        result.not_read_fully.push_back(pid);
      }
      ++stats.denied;
      if (scan.denied_other_user) ++stats.denied_other_users;
      if (stats.denied_pids.size() < kSampleSize) stats.denied_pids.push_back(pid);
    }
    if (scan.vanished) ++stats.vanished;
    stats.map_files_read = stats.map_files_read || scan.map_files_read;
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
    if (file.fds.empty() || !file.identity) return false;  // held through its maps alone
    // A zombie-led group's table is read through the thread that showed it.
    const std::string table = std::to_string(pid) +
                              (file.via_thread ? "/task/" + std::to_string(*file.via_thread) : "") +
                              "/fd/";
    for (int fd : file.fds) {
      const std::string link = table + std::to_string(fd);
      const std::optional<FileIdentity> now = identity_at(proc.root_fd(), link.c_str());
      if (!now || !now->same_file(*file.identity)) return false;
      // Same file; the text only says whether it was deleted since (shown as such).
      const ssize_t length = ::readlinkat(proc.root_fd(), link.c_str(), target, sizeof(target));
      if (length <= 0) return false;
      if (split_deleted(std::string_view(target, static_cast<std::size_t>(length))).deleted !=
          file.deleted) {
        return false;
      }
    }
  }
  return true;
}

void fill_access(const ProcFs& proc, FileHolding& holding) {
  std::vector<FileHolding> one;
  one.push_back(std::move(holding));
  fill_access(proc, one);
  holding = std::move(one.front());
}

namespace {

// fdinfo reads left blocked past the deadline, by process (PID and start time), thread and
// descriptor: not started again until they return.
using FdinfoKey = std::tuple<Pid, std::uint64_t, std::optional<Pid>, int>;
LeftBehind<FdinfoKey>& blocked_fdinfo_reads() {
  static LeftBehind<FdinfoKey> blocked;
  return blocked;
}

// One descriptor's fdinfo to read: which holding, which of its files, which descriptor.
struct FdinfoItem {
  std::size_t holding = 0;
  std::size_t file = 0;
  int fd = 0;
};

// Everything a reader touches is the batch's: one left blocked writes its slot later.
struct FdinfoBatch {
  ProcFs proc;
  std::vector<std::tuple<Pid, std::optional<Pid>, int>> reads;
  std::vector<std::optional<std::string>> texts;
  std::vector<std::shared_ptr<std::atomic<bool>>> returned;  // set once the read has returned
};

// The PIDs (in `late`, once each) whose fdinfo read is still blocked from an earlier look.
void plan_fdinfo_reads(std::vector<FileHolding>& holdings, FdinfoBatch& batch,
                       std::vector<FdinfoItem>& items, std::vector<Pid>& late) {
  for (std::size_t h = 0; h < holdings.size(); ++h) {
    for (std::size_t f = 0; f < holdings[h].files.size(); ++f) {
      HeldFile& file = holdings[h].files[f];
      file.drm_clients.clear();
      for (int fd : file.fds) {
        if (blocked_fdinfo_reads().still_running(
                {holdings[h].pid, holdings[h].start_ticks, file.via_thread, fd})) {
          if (std::find(late.begin(), late.end(), holdings[h].pid) == late.end()) {
            late.push_back(holdings[h].pid);
          }
          continue;
        }
        items.push_back({h, f, fd});
        batch.reads.emplace_back(holdings[h].pid, file.via_thread, fd);
        batch.returned.push_back(LeftBehind<FdinfoKey>::new_flag());
      }
    }
  }
}

}  // namespace

std::vector<Pid> fill_access(const ProcFs& proc, std::vector<FileHolding>& holdings) {
  // Every descriptor's fdinfo is read under the deadline, all holders' at once (one item each):
  // a DRM driver's takes the client's VM lock (a hung GPU's reset can hold it), and a device
  // driver's show_fdinfo can wait on anything it likes.
  auto batch = std::make_shared<FdinfoBatch>(FdinfoBatch{proc, {}, {}, {}});
  std::vector<FdinfoItem> items;
  std::vector<Pid> late;
  plan_fdinfo_reads(holdings, *batch, items, late);
  batch->texts.resize(items.size());
  constexpr std::size_t kReaders = 4;
  const std::vector<std::size_t> overdue =
      run_with_deadline(items.size(),
                        {.threads = static_cast<unsigned>(std::min(items.size(), kReaders)),
                         .deadline = proc.read_deadline()},
                        [batch](std::size_t i) {
                          const auto& [pid, tid, fd] = batch->reads[i];
                          batch->texts[i] = batch->proc.fd_info(pid, tid, fd);
                          batch->returned[i]->store(true);
                        });
  std::size_t next_overdue = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    FileHolding& holding = holdings[items[i].holding];
    HeldFile& file = holding.files[items[i].file];
    if (next_overdue < overdue.size() && overdue[next_overdue] == i) {
      ++next_overdue;
      if (std::find(late.begin(), late.end(), holding.pid) == late.end()) {
        late.push_back(holding.pid);
      }
      blocked_fdinfo_reads().remember(
          {holding.pid, holding.start_ticks, file.via_thread, items[i].fd}, batch->returned[i]);
      continue;
    }
    if (!batch->texts[i]) continue;
    // A DRM node's fdinfo also carries its client's usage stats; /dev/kfd has none.
    if (file.drm && file.drm->kind != DrmNode::Kind::kKfd) {
      if (auto client = parse_drm_fdinfo(*batch->texts[i])) {
        add_drm_client(file, std::move(*client));
      }
    }
    note_access(file, *batch->texts[i]);
  }
  std::sort(late.begin(), late.end());
  return late;
}

}  // namespace gpuclean::procfs
