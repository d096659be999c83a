// /proc/PID/stat: comm is any bytes a process chose (spaces, ')', newlines).
#include "fuzz_check.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuclean::fuzz::check;
  const std::string_view text = gpuclean::fuzz::as_text(data, size);
  auto parsed = gpuclean::procfs::parse_stat(text);
  if (parsed.ok()) {
    // comm is what lies between the first '(' and the last ')', copied as is.
    check(text.find(parsed->comm) != std::string_view::npos, "stat comm is a slice of the input");
    check(parsed->comm.size() + 2 <= size, "stat comm shorter than the input");
  }
  return 0;
}
