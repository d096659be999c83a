// Reading a file the user names as input (`check --against`, `diff`, `plot`): only a regular
// file, never waiting. A FIFO or a device would block the read forever (or hand over
// endless data), and gpuclean often runs as root in scripts; so the name is first located with
// O_PATH|O_NOFOLLOW one component at a time (which opens nothing; a symlink at the name is
// refused, not followed, and one on the way only followed when root or the caller owns it: a
// directory another user swapped for a link must not lead root elsewhere), checked to be a
// regular file of at most the limit, and only then opened for reading
// (O_NONBLOCK) through that descriptor. A regular file on a FUSE mount whose server does not
// answer can still block a read: that is beyond what a path check can see.
#pragma once

#include <cstddef>
#include <string>

#include "core/result.h"

namespace gpuclean {

// The whole contents of `path`, read by core/bounded_read.h's reader (the buffer grows with
// the file; `max_bytes` is a limit, not an allocation). Errors name the path: not found, a
// symlink (ELOOP), not a regular file, larger than `max_bytes` (its size, or a read that went
// on past it: refused, never cut), or a failed read.
Result<std::string> read_input_file(const std::string& path, std::size_t max_bytes);

}  // namespace gpuclean
