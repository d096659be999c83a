// kill --signal: "TERM", "SIGTERM", "term", "15".
#include "fuzz_check.h"
#include "ops/signals.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto signo = gpuclean::ops::parse_signal(gpuclean::fuzz::as_text(data, size));
  if (signo.ok()) {
    gpuclean::fuzz::check(*signo >= 1 && *signo <= 64, "a signal number is 1..64");
    (void)gpuclean::ops::signal_name(*signo);
  }
  return 0;
}
