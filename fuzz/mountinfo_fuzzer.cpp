// /proc/self/mountinfo: the cgroup2 mount, octal escapes decoded.
#include "fuzz_check.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto mount = gpuclean::procfs::parse_cgroup2_mount(gpuclean::fuzz::as_text(data, size));
  if (mount) {
    // Decoding only shrinks: \ooo (4 bytes) becomes one.
    gpuclean::fuzz::check(mount->mount_point.size() + mount->root.size() <= size,
                          "decoded mount fields are no longer than the input");
  }
  return 0;
}
