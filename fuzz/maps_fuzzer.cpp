// /proc/PID/maps, line by line: the mapped path (may contain spaces, may end " (deleted)").
#include "fuzz_check.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuclean::fuzz::check;
  const std::string_view line = gpuclean::fuzz::as_text(data, size);
  const std::string_view path = gpuclean::procfs::maps_line_path(line);
  if (!path.empty()) {
    check(path.front() == '/', "a maps path starts with '/'");
    check(path.data() >= line.data() && path.data() + path.size() <= line.data() + line.size(),
          "a maps path points into the line");
    const auto target = gpuclean::procfs::split_deleted(path);
    check(target.path.size() <= path.size(), "split_deleted only shortens");
  }
  return 0;
}
