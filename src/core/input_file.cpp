#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/unique_fd.h"

namespace gpuclean {

Result<std::string> read_input_file(const std::string& path, std::size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ELOOP) return Error{0, path + " is a symbolic link (give the file itself)"};
    return errno_error(path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno_error(path);
  if (!S_ISREG(st.st_mode))
    return Error{0, path + " is not a regular file (a FIFO or a device would block the read)"};
  if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    return Error{0, path + " is larger than " + std::to_string(max_bytes >> 20) + " MiB"};
  }
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
