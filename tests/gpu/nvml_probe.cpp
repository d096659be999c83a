// nvml_probe: the GPU view exactly as gpuclean's NVML layer reads it, as JSON on stdout, and
// on stderr how long each phase took (load + init, queries, shutdown) — where the time of a
// `gpuclean` call goes on a GPU machine.
// Exit 0 when NVML answered, 3 when it is absent or failing (message on stderr).
//
// nvml_probe --records: how gpuclean reads each process list (src/nvml/process_records.h), as
// text: the symbols that hint at the record layout, the raw bytes of each list, which strides
// pass the check and why the others fail, the stride chosen and the decoded list
// ("pid P used B" lines). tests/gpu/nvml_records.sh runs it next to nvidia-smi.
#include <chrono>
#include <cstring>
#include <iostream>
#include <string_view>

#include <fmt/format.h>

#include "nvml/nvml_library.h"
#include "nvml/nvml_source.h"
#include "nvml/process_records.h"
#include "output/json.h"

namespace {
double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}
std::string strides_text(const std::vector<std::size_t>& strides) {
  std::string text;
  for (std::size_t s : strides) text += (text.empty() ? "" : ", ") + std::to_string(s);
  return "{" + text + "}";
}

int probe_records() {
  using namespace gpuclean;
  using namespace gpuclean::nvml;
  auto lib = NvmlLibrary::load("libnvidia-ml.so.1");
  if (!lib.ok()) {
    std::cerr << "nvml_probe: " << lib.error().message() << '\n';
    return 3;
  }
  const NvmlFunctions& f = (*lib)->fn();
  if (auto rc = f.init(); rc != abi::kSuccess) {
    std::cerr << "nvml_probe: " << (*lib)->describe("nvmlInit", rc) << '\n';
    return 3;
  }
  char driver[abi::kSystemVersionBufferSize] = {};
  f.system_get_driver_version(driver, sizeof(driver));
  const LayoutHints& hints = f.layout;
  const StrideCandidates candidates = candidate_strides(hints);
  const RecordLimits base{read_pid_max("/proc/sys/kernel/pid_max"), 0};
  std::cout << fmt::format(
      "driver {}\nlist symbols {}\nnvmlDeviceGetConfComputeMemSizeInfo {}\n"
      "nvmlDeviceGetRunningProcessDetailList {}\ncandidate strides {} then {}\npid_max {}\n",
      driver, to_string(hints.symbols), hints.has_conf_compute_mem_size_info ? "yes" : "no",
      hints.has_running_process_detail_list ? "yes" : "no", strides_text(candidates.primary),
      strides_text(candidates.fallback), base.pid_max);
  unsigned count = 0;
  if (f.device_get_count(&count) != abi::kSuccess) return 3;
  int refused = 0;
  for (unsigned i = 0; i < count; ++i) {
    abi::Device device = nullptr;
    if (f.device_get_handle_by_index(i, &device) != abi::kSuccess) return 3;
    abi::Memory memory{};
    if (f.device_get_memory_info(device, &memory) != abi::kSuccess) return 3;
    RecordLimits limits = base;
    limits.memory_total = memory.total;
    const std::pair<const char*, NvmlFunctions::List> lists[] = {
        {"compute", f.compute}, {"graphics", f.graphics}, {"mps", f.mps}};
    for (const auto& [kind_name, fn] : lists) {
      if (fn == nullptr) continue;
      auto raw = fetch_process_list(**lib, kind_name, fn, device);
      if (!raw.ok()) {
        std::cout << fmt::format("GPU {} {}: {}\n", i, kind_name, raw.error().message());
        continue;
      }
      std::cout << fmt::format("GPU {} {}: {} records\n", i, kind_name, raw->count);
      // The bytes the largest known layout would cover, 32 to a row (… = kFillByte beyond).
      const std::size_t shown = std::min(raw->count, std::size_t{8}) * kStrideV3;
      for (std::size_t at = 0; at < shown; at += kStrideV3) {
        std::string row;
        for (std::size_t b = at; b < at + kStrideV3; ++b) {
          row += fmt::format("{:02x}{}", raw->bytes[b], b % 8 == 7 ? " " : "");
        }
        std::cout << "  bytes " << row << '\n';
      }
      std::vector<std::size_t> all = candidates.primary;
      all.insert(all.end(), candidates.fallback.begin(), candidates.fallback.end());
      for (std::size_t stride : all) {
        auto why = implausible_at(raw->bytes, raw->count, stride, limits);
        std::cout << fmt::format("  stride {}: {}\n", stride, why ? *why : "plausible");
      }
      const auto kind = std::string_view(kind_name) == "compute"    ? GpuProcess::Kind::kCompute
                        : std::string_view(kind_name) == "graphics" ? GpuProcess::Kind::kGraphics
                                                                    : GpuProcess::Kind::kMps;
      auto decoded = decode_process_records(raw->bytes, raw->count, candidates, limits, kind);
      if (!decoded.ok()) {
        std::cout << "  refused: " << decoded.error().context << '\n';
        ++refused;
        continue;
      }
      std::cout << "  chosen stride " << decoded->stride << '\n';
      for (const GpuProcess& p : decoded->processes) {
        std::cout << fmt::format("  pid {} used {}\n", p.pid,
                                 p.used_memory ? std::to_string(*p.used_memory) : "n/a");
      }
    }
  }
  f.shutdown();
  return refused == 0 ? 0 : 1;
}

int probe_view() {
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

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc > 1 && std::strcmp(argv[1], "--records") == 0) return probe_records();
    return probe_view();
  } catch (const std::exception& e) {
    std::cerr << "nvml_probe: " << e.what() << '\n';
    return 3;
  }
}
