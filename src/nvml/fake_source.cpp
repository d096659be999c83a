#include "nvml/fake_source.h"

#include <fstream>

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

GpuView view_from_json(const json& doc) {
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
    view.gpus.push_back(std::move(gpu));
  }
  return view;
}

class FakeGpuSource final : public GpuSource {
 public:
  FakeGpuSource(GpuView view, std::string fail_query)
      : view_(std::move(view)), fail_query_(std::move(fail_query)) {}
  Result<GpuView> query() override {
    if (!fail_query_.empty()) return Error{0, fail_query_};
    return view_;
  }

 private:
  GpuView view_;
  std::string fail_query_;
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
    opened.source =
        std::make_unique<FakeGpuSource>(view_from_json(doc), doc.value("fail_query", ""));
    opened.state = OpenedSource::State::kPresent;
  } catch (const json::exception& e) {
    opened.message = "test GPU source " + path + ": " + e.what();
  }
  return opened;
}

}  // namespace gpuclean::nvml
