// /proc/PID/maps, line by line: the range, the mapped inode's device and number, and the path
// (may contain spaces, may end " (deleted)"); the map_files name made from the range.
#include "fuzz_check.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuclean::fuzz::check;
  const std::string_view line = gpuclean::fuzz::as_text(data, size);
  const auto parsed = gpuclean::procfs::parse_maps_line(line);
  if (!parsed) return 0;
  auto inside = [&line](std::string_view part) {
    return part.empty() ||
           (part.data() >= line.data() && part.data() + part.size() <= line.data() + line.size());
  };
  check(inside(parsed->range) && inside(parsed->path), "the views point into the line");
  check(parsed->range.find('-') != std::string_view::npos, "a range has a '-'");
  if (!parsed->path.empty()) {
    check(parsed->path.front() == '/', "a maps path starts with '/'");
    const auto target = gpuclean::procfs::split_deleted(parsed->path);
    check(target.path.size() <= parsed->path.size(), "split_deleted only shortens");
  }
  const std::string name = gpuclean::procfs::map_files_name(parsed->range);
  check(name.size() <= parsed->range.size(), "a map_files name is never longer than the range");
  check(name.find('-') != std::string::npos, "a map_files name keeps the '-'");
  return 0;
}
