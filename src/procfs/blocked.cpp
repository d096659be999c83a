#include "procfs/blocked.h"

#include <fcntl.h>

#include <algorithm>
#include <map>
#include <thread>

#include "procfs/parse.h"

namespace gpuclean::procfs {
namespace {

using Clock = std::chrono::steady_clock;

// How often threads seen in D are re-read while they are watched.
constexpr auto kRecheckStep = std::chrono::milliseconds(20);

// A cgroup file this reads (a state, a flag, the events) fits a page; read no further.
constexpr std::size_t kGroupFileMax = 4096;

// "frozen 1" in a v2 group's cgroup.events (the group's effective state, an ancestor's freeze
// included).
bool v2_events_frozen(std::string_view events) {
  bool frozen = false;
  for_each_line(events, [&frozen](std::string_view line) { frozen |= trim(line) == "frozen 1"; });
  return frozen;
}

// The groups from `directory` up to `top` (the mount point), outermost first, for which
// `own_freeze` (the group's own freeze file) reads `set`.
std::vector<std::string> frozen_by(const std::string& directory, const std::string& top,
                                   const char* own_freeze, std::string_view set) {
  std::vector<std::string> out;
  std::string group = directory;
  while (group.size() >= top.size()) {
    if (auto text = read_file_at(AT_FDCWD, group + "/" + own_freeze, kGroupFileMax);
        text && trim(*text) == set) {
      out.push_back(group);
    }
    if (group.size() == top.size()) break;
    const std::size_t slash = group.rfind('/');
    if (slash == std::string::npos || slash < top.size()) break;
    group.resize(slash);
  }
  std::reverse(out.begin(), out.end());
  if (out.empty()) out.push_back(directory);  // unreadable: thawing its own group is the guess
  return out;
}

std::optional<char> thread_state(int root_fd, Pid pid, Pid tid) {
  auto text = read_file_at(root_fd, std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
  if (!text.ok()) return std::nullopt;
  auto stat = parse_stat(*text);
  if (!stat.ok()) return std::nullopt;
  return stat->state;
}

}  // namespace

FreezerMounts parse_freezer_mounts(std::string_view mountinfo) {
  FreezerMounts mounts;
  mounts.v2 = parse_cgroup2_mount(mountinfo);
  for_each_line(mountinfo, [&mounts](std::string_view line) {
    if (mounts.v1_freezer) return;
    auto mount = parse_mountinfo_line(line);
    if (!mount || mount->fstype != "cgroup" || !comma_list_has(mount->super_options, "freezer")) {
      return;
    }
    mounts.v1_freezer = Cgroup2Mount{std::move(mount->mount_point), std::move(mount->root)};
  });
  return mounts;
}

std::optional<std::string> parse_cgroup_v1_freezer(std::string_view cgroup_file) {
  std::optional<std::string> found;
  for_each_line(cgroup_file, [&found](std::string_view line) {
    // "ID:CONTROLLERS:PATH"; the path may itself hold ':'.
    const std::size_t first = line.find(':');
    if (found || first == std::string_view::npos) return;
    const std::size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) return;
    if (!comma_list_has(line.substr(first + 1, second - first - 1), "freezer")) return;
    found = std::string(line.substr(second + 1));
  });
  return found;
}

bool is_vfork_wait(std::string_view wchan) {
  return wchan == "kernel_clone" || wchan == "wait_for_vfork_done" || wchan == "do_fork" ||
         wchan == "_do_fork";
}

std::optional<std::string> cgroup_directory(const Cgroup2Mount& mount, std::string_view path) {
  if (path.empty() || path.front() != '/') return std::nullopt;
  // Outside this cgroup namespace, the kernel writes the path as "/../…": not under our mount.
  const std::string padded = std::string(path) + "/";
  if (padded.find("/../") != std::string::npos || padded.find("/./") != std::string::npos) {
    return std::nullopt;
  }
  std::string relative(path);
  if (mount.root != "/") {
    if (relative.rfind(mount.root, 0) != 0 ||
        (relative.size() > mount.root.size() && relative[mount.root.size()] != '/')) {
      return std::nullopt;
    }
    relative = relative.substr(mount.root.size());
  }
  while (!relative.empty() && relative.back() == '/') relative.pop_back();
  return mount.mount_point + relative;
}

BlockedCheck BlockedCheck::for_proc(const ProcFs& proc, Duration recheck) {
  auto mountinfo = read_file_at(proc.root_fd(), "self/mountinfo");  // none in a fixture tree
  return BlockedCheck(mountinfo.ok() ? parse_freezer_mounts(*mountinfo) : FreezerMounts{}, recheck);
}

std::optional<FrozenCgroup> BlockedCheck::frozen(const ProcessInfo& process) const {
  if (mounts_.v1_freezer && process.freezer_cgroup) {
    if (auto dir = cgroup_directory(*mounts_.v1_freezer, *process.freezer_cgroup)) {
      // FREEZING: the freeze is under way (or cannot finish); its tasks already wait in
      // __refrigerator, and a thaw is what ends it either way.
      if (auto state = read_file_at(AT_FDCWD, *dir + "/freezer.state", kGroupFileMax);
          state && (trim(*state) == "FROZEN" || trim(*state) == "FREEZING")) {
        return FrozenCgroup{
            FrozenCgroup::Version::kV1Freezer, *dir,
            frozen_by(*dir, mounts_.v1_freezer->mount_point, "freezer.self_freezing", "1")};
      }
    }
  }
  if (mounts_.v2 && process.cgroup) {
    if (auto dir = cgroup_directory(*mounts_.v2, *process.cgroup)) {
      if (auto events = read_file_at(AT_FDCWD, *dir + "/cgroup.events", kGroupFileMax);
          events && v2_events_frozen(*events)) {
        return FrozenCgroup{FrozenCgroup::Version::kV2, *dir,
                            frozen_by(*dir, mounts_.v2->mount_point, "cgroup.freeze", "1")};
      }
    }
  }
  return std::nullopt;
}

void BlockedCheck::settle(const ProcFs& proc, const std::vector<ProcessInfo*>& processes) const {
  // Threads to watch: (process, index into its threads).
  std::vector<std::pair<ProcessInfo*, std::size_t>> watched;
  for (ProcessInfo* process : processes) {
    process->frozen = frozen(*process);
    if (process->frozen || process->memory_map_locked) continue;
    for (std::size_t i = 0; i < process->threads.size(); ++i) {
      const ThreadInfo& t = process->threads[i];
      if (t.state == 'D' && !is_vfork_wait(t.wchan)) watched.emplace_back(process, i);
    }
  }
  if (watched.empty()) return;  // the common case: nothing in D, no wait
  const auto deadline = Clock::now() + recheck_;
  for (;;) {
    std::this_thread::sleep_until(std::min(deadline, Clock::now() + kRecheckStep));
    // A thread seen out of D (or gone) is not stuck; the rest are watched on.
    std::erase_if(watched, [&proc](const auto& w) {
      const ThreadInfo& t = w.first->threads[w.second];
      return thread_state(proc.root_fd(), w.first->pid, t.tid) != 'D';
    });
    if (watched.empty() || Clock::now() >= deadline) break;
  }
  for (const auto& [process, index] : watched) process->threads[index].stays_in_d = true;
}

void settle_blocked(const ProcFs& proc, std::vector<Result<ProcessInfo>>& processes) {
  std::vector<ProcessInfo*> read;
  for (Result<ProcessInfo>& p : processes) {
    if (p.ok()) read.push_back(&p.value());
  }
  if (read.empty()) return;
  BlockedCheck::for_proc(proc).settle(proc, read);
}

}  // namespace gpuclean::procfs
