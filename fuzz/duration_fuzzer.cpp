// --wait, --grace, --interval: "30s", "250ms", "1.5m", "2h", "5".
#include "core/duration.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto duration = gpuclean::parse_duration(gpuclean::fuzz::as_text(data, size));
  if (duration.ok()) gpuclean::fuzz::check(duration->count() >= 0, "durations are not negative");
  return 0;
}
