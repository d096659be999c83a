// nvml_probe: the GPU view exactly as gpuclean's NVML layer reads it, as JSON on stdout, and
// on stderr how long each phase took (load + init, queries, shutdown) — where the time of a
// `gpuclean` call goes on a GPU machine.
// Exit 0 when NVML answered, 3 when it is absent or failing (message on stderr).
#include <chrono>
#include <iostream>

#include "nvml/nvml_source.h"
#include "output/json.h"

namespace {
double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}
}  // namespace

int main() {
  using namespace gpuclean;
  auto t0 = std::chrono::steady_clock::now();
  auto opened = nvml::open_nvml();
  const double open_ms = ms_since(t0);
  if (opened.state != nvml::OpenedSource::State::kPresent) {
    std::cerr << "nvml_probe: " << opened.message << '\n';
    return 3;
  }
  auto t1 = std::chrono::steady_clock::now();
  auto view = opened.source->query();
  const double query_ms = ms_since(t1);
  auto t2 = std::chrono::steady_clock::now();
  opened.source.reset();  // nvmlShutdown + dlclose
  const double shutdown_ms = ms_since(t2);
  std::cerr << "nvml_probe: load+init " << open_ms << " ms, query " << query_ms << " ms, shutdown "
            << shutdown_ms << " ms\n";
  if (!view.ok()) {
    std::cerr << "nvml_probe: " << view.error().message() << '\n';
    return 3;
  }
  output::write_json(std::cout, output::to_json(*view));
  return 0;
}
