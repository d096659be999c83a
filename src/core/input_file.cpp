#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/unique_fd.h"

namespace gpuclean {

Result<std::string> read_input_file(const std::string& path, std::size_t max_bytes) {
  // O_PATH first: it opens nothing (a device's open() has side effects, a FIFO's blocks), and
  // fstat says what the name is; only a regular file is then opened for reading, through the
  // descriptor, so the name cannot be swapped in between.
  UniqueFd located(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!located) return errno_error(path);
  struct stat st {};
  if (::fstat(located.get(), &st) != 0) return errno_error(path);
  if (S_ISLNK(st.st_mode)) return Error{0, path + " is a symbolic link (give the file itself)"};
  if (!S_ISREG(st.st_mode)) {
    return Error{0, path + " is not a regular file (a FIFO or a device would block the read)"};
  }
  if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    return Error{0, path + " is larger than " + std::to_string(max_bytes >> 20) + " MiB"};
  }
  UniqueFd fd(::open(("/proc/self/fd/" + std::to_string(located.get())).c_str(),
                     O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return errno_error(path);
  // Read until end of file, never past the limit: the file may grow while it is read.
  std::string text;
  text.resize(max_bytes + 1);
  std::size_t have = 0;
  while (have < text.size()) {
    const ssize_t got = ::read(fd.get(), text.data() + have, text.size() - have);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno_error("read " + path);
    if (got == 0) break;
    have += static_cast<std::size_t>(got);
  }
  if (have > max_bytes) {
    return Error{0, path + " is larger than " + std::to_string(max_bytes >> 20) + " MiB"};
  }
  text.resize(have);
  return text;
}

}  // namespace gpuclean
