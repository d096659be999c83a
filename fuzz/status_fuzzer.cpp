// /proc/PID/status: the Uid and NSpid lines.
#include "fuzz_check.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto status = gpuclean::procfs::parse_status(gpuclean::fuzz::as_text(data, size));
  // Each NSpid entry needs at least one digit and one separator, except the last.
  gpuclean::fuzz::check(status.nspid.size() <= size / 2 + 1, "NSpid count bounded by input");
  return 0;
}
