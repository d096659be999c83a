// Reading a whole file into memory, at most a cap: the one reader under read_input_file (a file
// the user names) and procfs's read_file_at (every /proc and /sys file it reads). The
// cap is a limit, not an allocation: the buffer starts at the size fstat reports and doubles
// only while data keeps coming, since /proc and /sys report st_size 0 or 4096 whatever they
// hold and a pipe reports none, so only the end of the data ends the read.
#pragma once

#include <cstddef>
#include <string>

#include "core/result.h"

namespace gpuclean {

// What a file longer than the cap gives; the caller's choice.
enum class PastCap {
  kCut,     // its first max_bytes, and success (nothing past the cap is read)
  kRefuse,  // Error EFBIG: an input file cut short would be another file
};

// Reads fd to its end into `out` (its text replaced; its buffer kept, so a scan reading
// thousands of small files reuses one). A read interrupted by a signal is retried. Errors: the
// read's errno, or EFBIG (kRefuse); `out` is then empty.
Status read_bounded(int fd, std::string& out, std::size_t max_bytes, PastCap past_cap);

}  // namespace gpuclean
