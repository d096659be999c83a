// --gpus: "all", "0,2", "0-3".
#include <string>

#include "cli/common.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto gpus = gpuclean::cli::parse_gpu_list(std::string(gpuclean::fuzz::as_text(data, size)));
  if (gpus.ok() && gpus->has_value()) {
    for (const unsigned index : **gpus) {
      gpuclean::fuzz::check(index <= 1023, "GPU indexes stay below 1024");
    }
  }
  return 0;
}
