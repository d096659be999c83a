// --gpus: "all", "0,2", "0-3", and PCI addresses resolved against a view of two GPUs.
#include <string>

#include "cli/common.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(gpuclean::fuzz::as_text(data, size));
  auto gpus = gpuclean::cli::parse_gpu_list(text);
  if (gpus.ok() && gpus->has_value()) {
    for (const unsigned index : **gpus) {
      gpuclean::fuzz::check(index <= 1023, "GPU indexes stay below 1024");
    }
  }
  gpuclean::GpuView view;
  view.gpus.resize(2);
  view.gpus[0].pci_bus_id = "00000000:3B:00.0";
  view.gpus[1].index = 1;
  view.gpus[1].pci_bus_id = "0000:c3:00.0";
  auto resolved = gpuclean::cli::parse_gpu_list(text, &view);
  if (resolved.ok() && resolved->has_value() && gpuclean::cli::names_pci_address(text)) {
    for (const unsigned index : **resolved) {
      gpuclean::fuzz::check(index <= 1023, "a PCI address resolves to a GPU index");
    }
  }
  gpuclean::fuzz::check(!gpus.ok() || resolved.ok(), "a view never turns a valid list invalid");
  return 0;
}
