// readlink targets of /proc/PID/fd/N: a path, maybe with the kernel's " (deleted)".
#include <string>

#include "fuzz_check.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view target = gpuclean::fuzz::as_text(data, size);
  const auto split = gpuclean::procfs::split_deleted(target);
  // The split loses nothing: the path plus the marker (when found) is the target again.
  const std::string back = std::string(split.path) + (split.deleted ? " (deleted)" : "");
  gpuclean::fuzz::check(back == target, "split_deleted is lossless");
  gpuclean::fuzz::check(!split.deleted || !split.path.empty(), "a deleted file keeps a path");
  return 0;
}
