// ProcFs: read-only access to a procfs tree (normally /proc; tests point it at fixtures).
// Each process is opened once as a directory fd and everything is read relative to it, so a
// PID recycled mid-read fails with ESRCH instead of mixing two processes (htop does the same).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/duration.h"
#include "core/model.h"
#include "core/result.h"
#include "core/unique_fd.h"
#include "procfs/user_names.h"

namespace gpuclean::procfs {

// Reads the file `name` relative to dir_fd (AT_FDCWD: a path) to its end into out, by
// core/bounded_read.h's reader: a longer file is cut at `cap`, not refused (a caller that
// must know asks for one byte more). False with errno set on failure, out then empty. Shared
// by the scanners: out's buffer is reused, no allocation beyond it.
bool read_file_at(int dir_fd, const char* name, std::string& out, std::size_t cap = 1 << 20);
// The same read as a value; the error says "read NAME" with the errno.
Result<std::string> read_file_at(int dir_fd, const std::string& name, std::size_t cap = 1 << 20);

// How long reading one process's command line may take before gpuclean stops waiting: a
// normal read takes microseconds; one that waits on the target's locked memory map may never
// end (core/deadline_pool.h). Set by --proc-timeout.
inline constexpr Duration kDefaultReadDeadline = std::chrono::seconds(1);

// At most this much of a process's environment is read (/proc/PID/environ): a variable beyond
// it is not known. Its user can make it megabytes.
inline constexpr std::size_t kEnvironMax = 128 << 10;

// What a process's environment says of one variable.
struct EnvironmentValue {
  // false: not known — the process is gone or is another one now, gpuclean may not read its
  // environment, the read did not come within the deadline (or its memory map is known to be
  // locked), or the variable is not in the first kEnvironMax bytes.
  bool read = false;
  // When read: its value (the first entry of that name, getenv's), nullopt when it is unset.
  // Text the process's user chose: compare it, never print it unescaped.
  std::optional<std::string> value;
};

// `name`'s value in an environ text (NUL-separated NAME=VALUE entries). `whole`: the text is
// the whole environment, not its first kEnvironMax bytes — a variable not found in a cut text,
// or cut itself, is not known.
EnvironmentValue environ_value(std::string_view text, std::string_view name, bool whole);

// A cheap handle: copies share the open root, the caches and what was learned about processes
// whose memory map is locked (so each costs one deadline, not one per read).
class ProcFs {
 public:
  // Opens the root (e.g. "/proc"). Fails if it is not a readable directory. `read_deadline`:
  // how long a read that takes the target's mmap lock may take (nullopt: as long as it takes).
  static Result<ProcFs> open(const std::string& root,
                             std::optional<Duration> read_deadline = kDefaultReadDeadline);

  [[nodiscard]] const std::string& root() const;
  [[nodiscard]] int root_fd() const;
  [[nodiscard]] std::optional<Duration> read_deadline() const;

  // PIDs of all thread groups (numeric entries of the root), ascending.
  [[nodiscard]] Result<std::vector<Pid>> list_pids() const;

  // Everything about one process except its open files. A vanished process gives an Error with
  // is_vanished(); parts that are unreadable (cmdline of another user's process under
  // hidepid, say) are left empty/nullopt rather than failing the whole read. A command line
  // that did not come within the read deadline is left empty and memory_map_locked is set:
  // the process (its pid and start time) is remembered and not waited on again.
  [[nodiscard]] Result<ProcessInfo> read_process(Pid pid) const;
  // read_process for each pid (same order), on worker threads: a table of hundreds of
  // processes costs one deadline however many of them are locked.
  [[nodiscard]] std::vector<Result<ProcessInfo>> read_processes(const std::vector<Pid>& pids) const;

  // Whether pid is a process found locked before, whose blocked read has not returned yet
  // (then reading its command line or maps would wait again).
  [[nodiscard]] bool memory_map_locked(Pid pid) const;
  // The holder scan's maps read of pid did not answer in time: remembered as locked when a
  // thread of it is in D (a merely slow read is not a lock), until `returned` (set by the
  // read left behind) says the lock was released. False when not locked or gone.
  bool note_memory_map_locked(Pid pid, std::shared_ptr<std::atomic<bool>> returned) const;

  // Open flags (O_ACCMODE etc.) of descriptor fd, read through task/TID when tid is given
  // (a zombie leader's own fdinfo is empty).
  [[nodiscard]] std::optional<std::uint32_t> fd_flags(Pid pid, std::optional<Pid> tid,
                                                      int fd) const;
  // The whole fdinfo text of descriptor fd (flags, and a DRM node's client usage stats),
  // through task/TID when tid is given. nullopt when it cannot be read.
  [[nodiscard]] std::optional<std::string> fd_info(Pid pid, std::optional<Pid> tid, int fd) const;

  // The thread group `id` belongs to, when `id` is a thread that does not lead one (/proc/TID
  // answers for every thread, though only leaders are listed). nullopt for a leader, or when
  // /proc cannot say.
  [[nodiscard]] std::optional<Pid> thread_group_of(Pid id) const;

  // pid's start time in clock ticks since boot (stat field 22), or nullopt when it is gone or
  // its stat cannot be read: one small read, for checking a PID@START before anything else.
  [[nodiscard]] std::optional<std::uint64_t> start_ticks(Pid pid) const;

  // `name` in the environment of each process (pid, start ticks), in the same order: a PID whose
  // start time is another is not read. Reading environ takes the target's mmap lock, so each
  // read runs under the read deadline on a worker (core/deadline_pool.h), a process known to be
  // locked is not read, and one whose read did not come in time is remembered as locked when a
  // thread of it is in D (as read_processes does). Cheap only for a few processes: ask only
  // where the answer decides something.
  [[nodiscard]] std::vector<EnvironmentValue> environment_values(
      const std::vector<std::pair<Pid, std::uint64_t>>& processes, std::string_view name) const;

  // System boot time in seconds since the epoch (from stat's btime), cached at open().
  [[nodiscard]] std::optional<std::int64_t> boot_time() const;

  struct State;

 private:
  explicit ProcFs(std::shared_ptr<State> state) : state_(std::move(state)) {}
  // Shared with the reader threads, which may outlive this handle (one left blocked).
  std::shared_ptr<State> state_;
};

}  // namespace gpuclean::procfs
