// /proc/PID/cgroup: the "0::" line of cgroup v2.
#include "fuzz_check.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuclean::fuzz::as_text(data, size);
  const auto path = gpuclean::procfs::parse_cgroup_v2(text);
  if (path) {
    gpuclean::fuzz::check(path->find('\n') == std::string::npos, "cgroup path is one line");
    gpuclean::fuzz::check(text.find("0::" + *path) != std::string_view::npos,
                          "cgroup path comes from a 0:: line");
  }
  return 0;
}
