// Replacing a file atomically: the one way gpuclean writes a file a reader may be watching
// (`run --record`, `snapshot -o`, `metrics --textfile`, `plot -o`). A reader sees the old file or
// the whole new one, never half of it; a failure leaves the old file as it was.
//
// The directory is opened once with O_NOFOLLOW (a link at its name is refused) and must not be
// writable by others unless it is sticky (else they could swap the file before the rename).
//
// Safe in a shared directory as root (a sticky, world-writable textfile directory): the temp
// file gets an unpredictable name and is created with O_CREAT|O_EXCL|O_NOFOLLOW, so a link
// planted at any name is never followed; the final rename(2) replaces whatever is at the
// target's name — a planted symlink included — and never follows it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "core/unique_fd.h"

namespace gpuclean {

// Test seams; leave empty for the real calls.
struct AtomicFileHooks {
  // write(2); a test passes short, interrupted or failing writes.
  std::function<ssize_t(int fd, const void* data, std::size_t size)> write;
  // The temp file's name in the target's directory (no '/'); default: unpredictable.
  std::function<std::string()> temp_name;
};

class AtomicFile {
 public:
  // Creates the temp file in `path`'s directory (mode `mode`, less the umask). Errors: the
  // directory cannot be opened, or no temp file could be created there (errno of openat).
  // Creating early (before the work whose result is written) makes a bad path cost nothing.
  static Result<AtomicFile> create(const std::string& path, unsigned mode = 0644,
                                   AtomicFileHooks hooks = {});

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Not committed (or the commit failed): the temp file is removed; the target is untouched.
  ~AtomicFile();

  // Writes `contents` (every byte: short writes and EINTR are retried; ENOSPC, EIO, … are
  // errors), fsyncs and closes the temp file (each checked), renames it over the target and
  // fsyncs the directory. On an error before the rename the temp file is removed and the
  // target untouched; an error from the directory's fsync comes after the new file is in
  // place (it names "fsync"). Call once.
  Status commit(std::string_view contents);

  // The temp file's path (directory of the target + its name), for messages and tests.
  [[nodiscard]] std::string temp_path() const;

 private:
  AtomicFile() = default;
  void discard() noexcept;

  std::string path_;       // the target, as given
  std::string directory_;  // its directory, as given ("." when none)
  std::string name_;       // the target's name in the directory
  std::string temp_name_;  // the temp file's name in the directory
  UniqueFd dir_;
  UniqueFd fd_;
  AtomicFileHooks hooks_;
  bool pending_ = false;  // the temp file exists under temp_name_
};

// AtomicFile::create + commit in one step.
Status write_file_atomically(const std::string& path, std::string_view contents,
                             unsigned mode = 0644);

}  // namespace gpuclean
