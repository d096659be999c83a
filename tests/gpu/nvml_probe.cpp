// nvml_probe: the GPU view exactly as gpuclean's NVML layer reads it, as JSON on stdout.
// tests/gpu/run.sh compares its PIDs and memory with nvidia-smi's: a wrong process-record
// layout (the bug that scrambles PIDs in other tools) shows up as a mismatch.
// Exit 0 when NVML answered, 3 when it is absent or failing (message on stderr).
#include <iostream>

#include "nvml/nvml_source.h"
#include "output/json.h"

int main() {
  using namespace gpuclean;
  auto opened = nvml::open_nvml();
  if (opened.state != nvml::OpenedSource::State::kPresent) {
    std::cerr << "nvml_probe: " << opened.message << '\n';
    return 3;
  }
  auto view = opened.source->query();
  if (!view.ok()) {
    std::cerr << "nvml_probe: " << view.error().message() << '\n';
    return 3;
  }
  output::write_json(std::cout, output::to_json(*view));
  return 0;
}
