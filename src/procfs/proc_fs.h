// ProcFs: read-only access to a procfs tree (normally /proc; tests point it at fixtures).
// Each process is opened once as a directory fd and everything is read relative to it, so a
// PID recycled mid-read fails with ESRCH instead of mixing two processes (htop does the same).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/unique_fd.h"
#include "procfs/user_names.h"

namespace gpuclean::procfs {

// Reads a whole file relative to dir_fd into out (cleared first), at most max_bytes.
// Returns false with errno set on failure. Shared by the scanners; no allocation beyond out.
bool read_file_at(int dir_fd, const char* name, std::string& out, std::size_t max_bytes = 1 << 20);

class ProcFs {
 public:
  // Opens the root (e.g. "/proc"). Fails if it is not a readable directory.
  static Result<ProcFs> open(const std::string& root);

  [[nodiscard]] const std::string& root() const { return root_; }
  [[nodiscard]] int root_fd() const { return root_fd_.get(); }

  // PIDs of all thread groups (numeric entries of the root), ascending.
  [[nodiscard]] Result<std::vector<Pid>> list_pids() const;

  // Everything about one process except its open files. A vanished process gives an Error with
  // is_vanished(); parts that are unreadable (cmdline of another user's process under
  // hidepid, say) are left empty/nullopt rather than failing the whole read.
  [[nodiscard]] Result<ProcessInfo> read_process(Pid pid) const;

  // Open flags (O_ACCMODE etc.) of descriptor fd, read through task/TID when tid is given
  // (a zombie leader's own fdinfo is empty).
  [[nodiscard]] std::optional<std::uint32_t> fd_flags(Pid pid, std::optional<Pid> tid,
                                                      int fd) const;

  // System boot time in seconds since the epoch (from stat's btime), cached at open().
  [[nodiscard]] std::optional<std::int64_t> boot_time() const { return boot_time_; }

 private:
  ProcFs(std::string root, UniqueFd root_fd, std::optional<std::int64_t> boot_time)
      : root_(std::move(root)), root_fd_(std::move(root_fd)), boot_time_(boot_time) {}

  std::string root_;
  UniqueFd root_fd_;
  std::optional<std::int64_t> boot_time_;
  long clock_ticks_ = 100;
  std::unique_ptr<UserNames> users_ = std::make_unique<UserNames>();  // heap: ProcFs stays movable
};

}  // namespace gpuclean::procfs
