#include "core/bounded_read.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace gpuclean {

Status read_bounded(int fd, std::string& out, std::size_t max_bytes, PastCap past_cap) {
  // Refusing needs one byte past the cap: it tells a longer file from one that ends there.
  const std::size_t limit = past_cap == PastCap::kRefuse ? max_bytes + 1 : max_bytes;
  // The first guess: the size fstat sees and a byte more, so that a file of that size meets its
  // end without the buffer growing; a page where it sees none (/proc, a pipe), which most /proc
  // files gpuclean reads fit.
  struct stat st {};
  const bool sized = ::fstat(fd, &st) == 0 && st.st_size > 0;
  out.resize(std::min(limit, sized ? static_cast<std::size_t>(st.st_size) + 1 : 4096));
  std::size_t have = 0;
  int error = 0;
  while (have < limit) {
    if (have == out.size()) out.resize(std::min(limit, 2 * have));
    const ssize_t got = ::read(fd, out.data() + have, out.size() - have);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) error = errno;
    if (got <= 0) break;
    have += static_cast<std::size_t>(got);
  }
  if (error == 0 && have > max_bytes) error = EFBIG;
  out.resize(error == 0 ? have : 0);
  return error == 0 ? Status(Ok{}) : Status(Error{error, "read"});
}

}  // namespace gpuclean
