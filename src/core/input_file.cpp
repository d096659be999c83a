#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <string_view>
#include <vector>

#include "core/bounded_read.h"
#include "core/unique_fd.h"

namespace gpuclean {
namespace {

constexpr int kMaxLinks = 40;  // as the kernel's own path walk (ELOOP past it)

// "a/b//c" → {"a", "b", "c"}, appended to `out` in order.
void append_components(std::string_view path, std::vector<std::string>& out) {
  std::size_t pos = 0;
  while (pos < path.size()) {
    const std::size_t slash = path.find('/', pos);
    const std::size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > pos) out.emplace_back(path.substr(pos, end - pos));
    pos = end + 1;
  }
}

// Locates `path` with O_PATH one component at a time, as the kernel would, except that a
// symbolic link on the way is followed only when root or the caller owns it: a link another
// user made (a directory of theirs that they replaced with a link to /etc, say) is refused,
// and so is one at the final name. Each step opens from the previous step's descriptor, so no
// name can be swapped between a check and its use.
Result<UniqueFd> locate(const std::string& path) {
  std::vector<std::string> pending;  // components still to walk, last first
  append_components(path, pending);
  std::reverse(pending.begin(), pending.end());
  UniqueFd at(::open(path.rfind('/', 0) == 0 ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!at) return errno_error(path);
  if (pending.empty()) return at;
  int links = 0;
  while (!pending.empty()) {
    const std::string name = std::move(pending.back());
    pending.pop_back();
    UniqueFd next(::openat(at.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return errno_error(path);
    struct stat st {};
    if (::fstat(next.get(), &st) != 0) return errno_error(path);
    if (!S_ISLNK(st.st_mode)) {
      at = std::move(next);
      continue;
    }
    if (pending.empty()) return Error{0, path + " is a symbolic link (give the file itself)"};
    if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
      std::string message = path;
      message += ": " + name;
      message += " on the way is a symbolic link of user " + std::to_string(st.st_uid);
      message += " (give a path without it)";
      return Error{0, message};
    }
    if (++links > kMaxLinks) return Error{ELOOP, path};
    std::string target(PATH_MAX, '\0');
    const ssize_t length = ::readlinkat(next.get(), "", target.data(), target.size());
    if (length < 0) return errno_error(path);
    target.resize(static_cast<std::size_t>(length));
    std::vector<std::string> more;
    append_components(target, more);
    for (auto it = more.rbegin(); it != more.rend(); ++it) pending.push_back(*it);
    if (target.rfind('/', 0) == 0) {
      at = UniqueFd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!at) return errno_error(path);
    }
  }
  return at;
}

Error too_large(const std::string& path, std::size_t max_bytes) {
  return Error{0, path + " is larger than " + std::to_string(max_bytes >> 20) + " MiB"};
}

}  // namespace

Result<std::string> read_input_file(const std::string& path, std::size_t max_bytes) {
  // O_PATH first: it opens nothing (a device's open() has side effects, a FIFO's blocks), and
  // fstat says what the name is; only a regular file is then opened for reading, through the
  // descriptor, so the name cannot be swapped in between.
  auto found = locate(path);
  if (!found.ok()) return found.error();
  UniqueFd located = std::move(*found);
  struct stat st {};
  if (::fstat(located.get(), &st) != 0) return errno_error(path);
  if (S_ISLNK(st.st_mode)) return Error{0, path + " is a symbolic link (give the file itself)"};
  if (!S_ISREG(st.st_mode)) {
    return Error{0, path + " is not a regular file (a FIFO or a device would block the read)"};
  }
  if (static_cast<std::size_t>(st.st_size) > max_bytes) return too_large(path, max_bytes);
  UniqueFd fd(::open(("/proc/self/fd/" + std::to_string(located.get())).c_str(),
                     O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return errno_error(path);
  // Refused past the limit, not cut: the file may have grown since its size was checked.
  std::string text;
  const Status got = read_bounded(fd.get(), text, max_bytes, PastCap::kRefuse);
  if (got.ok()) return text;
  if (got.error().errnum == EFBIG) return too_large(path, max_bytes);
  return Error{got.error().errnum, "read " + path};
}

}  // namespace gpuclean
