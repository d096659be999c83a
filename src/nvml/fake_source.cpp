#include "nvml/fake_source.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace gpuclean::nvml {
namespace {

using nlohmann::json;

template <typename T>
std::optional<T> optional_field(const json& object, const char* key) {
  if (!object.contains(key) || object[key].is_null()) return std::nullopt;
  return object[key].get<T>();
}

GpuProcess::Kind kind_from(const std::string& text) {
  if (text == "graphics") return GpuProcess::Kind::kGraphics;
  if (text == "mps") return GpuProcess::Kind::kMps;
  return GpuProcess::Kind::kCompute;
}

}  // namespace

GpuView gpu_view_from_json(const json& doc) {
  GpuView view;
  view.driver_version = doc.value("driver_version", "");
  view.nvml_version = doc.value("nvml_version", "");
  view.cuda_driver_version = optional_field<int>(doc, "cuda_driver_version");
  for (const json& g : doc.value("gpus", json::array())) {
    Gpu gpu;
    gpu.index = g.at("index").get<unsigned>();
    gpu.uuid = g.value("uuid", "");
    gpu.name = g.value("name", "");
    gpu.pci_bus_id = g.value("pci_bus_id", "");
    gpu.minor = optional_field<unsigned>(g, "minor");
    if (g.contains("memory")) {
      const json& m = g["memory"];
      gpu.memory = GpuMemory{m.at("total").get<Bytes>(), m.at("used").get<Bytes>(),
                             m.at("free").get<Bytes>(), optional_field<Bytes>(m, "reserved")};
    }
    gpu.persistence_mode = optional_field<bool>(g, "persistence_mode");
    gpu.compute_mode = optional_field<std::string>(g, "compute_mode");
    gpu.mig_enabled = optional_field<bool>(g, "mig_enabled");
    for (const json& p : g.value("processes", json::array())) {
      GpuProcess process;
      process.pid = p.at("pid").get<Pid>();
      process.used_memory = optional_field<Bytes>(p, "used_memory");
      process.kind = kind_from(p.value("kind", "compute"));
      gpu.processes.push_back(process);
    }
    gpu.utilization = optional_field<unsigned>(g, "utilization");
    gpu.temperature_c = optional_field<unsigned>(g, "temperature_c");
    gpu.power_mw = optional_field<unsigned>(g, "power_mw");
    if (g.contains("activity") && g["activity"].is_object()) {
      GpuActivity activity;
      activity.source = g["activity"].value("source", "");
      for (const json& s : g["activity"].value("samples", json::array())) {
        const auto time = optional_field<double>(s, "time");
        activity.samples.push_back({s.at("pid").get<Pid>(), s.value("sm", 0u), s.value("mem", 0u),
                                    time ? static_cast<std::uint64_t>(*time * 1e6) : 0});
      }
      gpu.activity = std::move(activity);
    }
    gpu.activity_unavailable = optional_field<std::string>(g, "activity_unavailable").value_or("");
    view.gpus.push_back(std::move(gpu));
  }
  return view;
}

namespace {

// Each optional field of GpuDetails with its key, in the file's order: one list for reading and
// writing.
template <typename Details, typename Fn>
void for_each_detail(Details& d, Fn fn) {
  fn("clocks_sm", d.clocks.sm_mhz);
  fn("clocks_memory", d.clocks.memory_mhz);
  fn("application_clocks_sm", d.application_clocks.sm_mhz);
  fn("application_clocks_memory", d.application_clocks.memory_mhz);
  fn("max_clocks_sm", d.max_clocks.sm_mhz);
  fn("max_clocks_memory", d.max_clocks.memory_mhz);
  fn("throttle_reasons", d.throttle_reasons);
  fn("temperature_c", d.temperature_c);
  fn("power_limit_mw", d.power_limit_mw);
  fn("ecc_enabled", d.ecc_enabled);
  fn("ecc_pending_enabled", d.ecc_pending_enabled);
  fn("ecc_volatile_corrected", d.ecc_errors.volatile_corrected);
  fn("ecc_volatile_uncorrected", d.ecc_errors.volatile_uncorrected);
  fn("ecc_aggregate_corrected", d.ecc_errors.aggregate_corrected);
  fn("ecc_aggregate_uncorrected", d.ecc_errors.aggregate_uncorrected);
  fn("retired_pages_single_bit", d.retired_pages_single_bit);
  fn("retired_pages_double_bit", d.retired_pages_double_bit);
  fn("remapped_rows_correctable", d.remapped_rows_correctable);
  fn("remapped_rows_uncorrectable", d.remapped_rows_uncorrectable);
  fn("remapping_pending", d.remapping_pending);
  fn("remapping_failed", d.remapping_failed);
}

}  // namespace

GpuDetails gpu_details_from_json(const json& g) {
  GpuDetails d;
  d.index = g.at("index").get<unsigned>();
  for_each_detail(d, [&g](const char* key, auto& field) {
    field = optional_field<typename std::decay_t<decltype(field)>::value_type>(g, key);
  });
  return d;
}

json gpu_details_to_json(const GpuDetails& d) {
  json g = {{"index", d.index}};
  for_each_detail(d, [&g](const char* key, const auto& value) {
    if (value) g[key] = *value;
  });
  return g;
}

namespace {

// What the source says once a file exists: a GPU that changes during a test (`run` leaving
// memory behind, NVML failing mid-run), switched by the test's own workload.
struct LaterView {
  std::string when_exists;  // path
  std::optional<GpuView> view;
  std::string fail_query;
};

class FakeGpuSource final : public GpuSource {
 public:
  FakeGpuSource(GpuView view, std::vector<GpuDetails> details, std::string fail_query,
                std::optional<LaterView> later, std::string answered_mark)
      : view_(std::move(view)),
        details_(std::move(details)),
        fail_query_(std::move(fail_query)),
        later_(std::move(later)),
        answered_mark_(std::move(answered_mark)) {}
  Result<GpuView> query() override {
    Result<GpuView> answer = answer_now();
    if (!answered_mark_.empty()) std::ofstream(answered_mark_, std::ios::app) << 'x';
    return answer;
  }
  std::vector<GpuDetails> query_details() override { return details_; }

 private:
  Result<GpuView> answer_now() const {
    if (later_ && std::filesystem::exists(later_->when_exists)) {
      if (!later_->fail_query.empty()) return Error{0, later_->fail_query};
      if (later_->view) return *later_->view;
    }
    if (!fail_query_.empty()) return Error{0, fail_query_};
    return view_;
  }

  GpuView view_;
  std::vector<GpuDetails> details_;
  std::string fail_query_;
  std::optional<LaterView> later_;
  std::string answered_mark_;
};

}  // namespace

OpenedSource open_fake_source(const std::string& path) {
  OpenedSource opened;
  opened.state = OpenedSource::State::kFailed;
  std::ifstream in(path);
  if (!in) {
    opened.message = "test GPU source " + path + ": cannot open";
    return opened;
  }
  try {
    const json doc = json::parse(in);
    const std::string state = doc.value("state", "present");
    opened.message = doc.value("message", "");
    if (state == "absent") {
      opened.state = OpenedSource::State::kAbsent;
      return opened;
    }
    if (state == "failed") return opened;
    std::vector<GpuDetails> details;
    for (const json& g : doc.value("gpus", json::array()))
      details.push_back(gpu_details_from_json(g));
    std::optional<LaterView> later;
    if (doc.contains("later")) {
      const json& l = doc["later"];
      later = LaterView{l.at("when_exists").get<std::string>(), std::nullopt,
                        l.value("fail_query", "")};
      if (l.contains("gpus")) later->view = gpu_view_from_json(l);
    }
    opened.source = std::make_unique<FakeGpuSource>(gpu_view_from_json(doc), std::move(details),
                                                    doc.value("fail_query", ""), std::move(later),
                                                    doc.value("answered_mark", ""));
    opened.state = OpenedSource::State::kPresent;
  } catch (const json::exception& e) {
    opened.message = "test GPU source " + path + ": " + e.what();
  }
  return opened;
}

}  // namespace gpuclean::nvml
