#include "input/snapshot_reader.h"

#include <map>

#include "input/json_reader.h"

namespace gpuclean::input {
namespace {

using nlohmann::json;

std::string basename_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void read_clock_domain(JsonReader& r, const json& clocks, const char* domain,
                       const std::string& path, std::optional<unsigned>& current,
                       std::optional<unsigned>& application, std::optional<unsigned>& max) {
  const json* d = r.object(clocks, domain, path);
  if (d == nullptr) return;
  const std::string here = path + "." + domain;
  current = r.count<unsigned>(*d, "current", here);
  application = r.count<unsigned>(*d, "application", here);
  max = r.count<unsigned>(*d, "max", here);
}

void read_details(JsonReader& r, const json& g, const std::string& path, GpuDetails& d) {
  if (const json* clocks = r.object(g, "clocks", path)) {
    const std::string here = path + ".clocks";
    read_clock_domain(r, *clocks, "sm", here, d.clocks.sm_mhz, d.application_clocks.sm_mhz,
                      d.max_clocks.sm_mhz);
    read_clock_domain(r, *clocks, "memory", here, d.clocks.memory_mhz,
                      d.application_clocks.memory_mhz, d.max_clocks.memory_mhz);
  }
  if (const json* t = r.object(g, "throttle_reasons", path)) {
    d.throttle_reasons = r.count<std::uint64_t>(*t, "mask", path + ".throttle_reasons");
  }
  d.temperature_c = r.count<unsigned>(g, "temperature_c", path);
  d.power_limit_mw = r.count<unsigned>(g, "power_limit_mw", path);
  if (const json* ecc = r.object(g, "ecc", path)) {
    const std::string here = path + ".ecc";
    d.ecc_enabled = r.boolean(*ecc, "enabled", here);
    d.ecc_pending_enabled = r.boolean(*ecc, "pending_enabled", here);
    if (const json* v = r.object(*ecc, "volatile", here)) {
      d.ecc_errors.volatile_corrected = r.count<std::uint64_t>(*v, "corrected", here + ".volatile");
      d.ecc_errors.volatile_uncorrected =
          r.count<std::uint64_t>(*v, "uncorrected", here + ".volatile");
    }
    if (const json* a = r.object(*ecc, "aggregate", here)) {
      d.ecc_errors.aggregate_corrected =
          r.count<std::uint64_t>(*a, "corrected", here + ".aggregate");
      d.ecc_errors.aggregate_uncorrected =
          r.count<std::uint64_t>(*a, "uncorrected", here + ".aggregate");
    }
  }
  if (const json* p = r.object(g, "retired_pages", path)) {
    const std::string here = path + ".retired_pages";
    d.retired_pages_single_bit = r.count<unsigned>(*p, "single_bit_ecc", here);
    d.retired_pages_double_bit = r.count<unsigned>(*p, "double_bit_ecc", here);
  }
  if (const json* rows = r.object(g, "remapped_rows", path)) {
    const std::string here = path + ".remapped_rows";
    d.remapped_rows_correctable = r.count<unsigned>(*rows, "correctable", here);
    d.remapped_rows_uncorrectable = r.count<unsigned>(*rows, "uncorrectable", here);
    d.remapping_pending = r.boolean(*rows, "pending", here);
    d.remapping_failed = r.boolean(*rows, "failed", here);
  }
}

std::vector<SnapshotGpu> read_gpus(JsonReader& r, const json& gpus) {
  std::vector<SnapshotGpu> out;
  r.each_object(gpus, "gpus", [&](const json& g, const std::string& path, std::size_t i) {
    SnapshotGpu gpu;
    gpu.index = r.count<unsigned>(g, "index", path).value_or(static_cast<unsigned>(i));
    gpu.uuid = r.string(g, "uuid", path);
    gpu.name = r.string(g, "name", path);
    gpu.pci_bus_id = r.string(g, "pci_bus_id", path);
    if (const json* m = r.object(g, "memory", path)) {
      gpu.memory_total = r.count<Bytes>(*m, "total", path + ".memory");
      gpu.memory_used = r.count<Bytes>(*m, "used", path + ".memory");
    }
    gpu.persistence_mode = r.boolean(g, "persistence_mode", path);
    gpu.compute_mode = r.string(g, "compute_mode", path);
    gpu.mig_enabled = r.boolean(g, "mig_enabled", path);
    read_details(r, g, path, gpu.details);
    gpu.details.index = gpu.index;
    out.push_back(std::move(gpu));
    return true;
  });
  return out;
}

std::vector<SnapshotHolder> read_holders(JsonReader& r, const json& holders) {
  std::vector<SnapshotHolder> out;
  r.each_object(holders, "holders", [&](const json& h, const std::string& path, std::size_t) {
    SnapshotHolder holder;
    auto pid = r.count<unsigned>(h, "pid", path);
    if (!pid) {
      r.report(path + ".pid", "missing");
      return false;
    }
    holder.pid = static_cast<Pid>(*pid);
    holder.start_time = r.string(h, "start_time", path);
    holder.user = r.string(h, "user", path).value_or("");
    holder.klass = r.string(h, "class", path).value_or("");
    holder.name = r.string(h, "comm", path).value_or("");
    if (const json* argv = r.array(h, "cmdline", path);
        argv != nullptr && !argv->empty() && argv->front().is_string()) {
      const std::string first = basename_of(argv->front().get<std::string>());
      if (!first.empty()) holder.name = first;
    }
    holder.gpu_memory = r.gpu_memory(h, path);
    out.push_back(std::move(holder));
    return true;
  });
  return out;
}

KernelLog read_kernel_log_section(JsonReader& r, const json& k) {
  KernelLog log;
  log.readable = r.boolean(k, "readable", "kernel_log").value_or(false);
  log.error = r.string(k, "error", "kernel_log").value_or("");
  if (const json* xids = r.array(k, "xid", "kernel_log")) {
    r.each_object(*xids, "kernel_log.xid",
                  [&](const json& x, const std::string& path, std::size_t) {
                    XidEvent event;
                    event.seconds_since_boot = r.number(x, "seconds_since_boot", path).value_or(0);
                    event.xid = r.count<unsigned>(x, "xid", path).value_or(0);
                    event.device = r.string(x, "device", path).value_or("");
                    event.message = r.string(x, "message", path).value_or("");
                    log.xids.push_back(std::move(event));
                    return true;
                  });
  }
  return log;
}

HostFacts read_system(JsonReader& r, const json& s) {
  HostFacts facts;
  facts.kernel_release = r.string(s, "kernel_release", "system");
  facts.kernel_version = r.string(s, "kernel_version", "system");
  facts.boot_id = r.string(s, "boot_id", "system");
  facts.cpu_governor = r.string(s, "cpu_governor", "system");
  if (const json* env = r.object(s, "environment", "system")) {
    for (const auto& [name, value] : env->items()) {
      if (!value.is_string()) {
        r.report("system.environment." + name, "expected a string");
        break;
      }
      facts.environment[name] = value.get<std::string>();
    }
  }
  return facts;
}

}  // namespace

Result<Snapshot> parse_snapshot(std::string_view text) {
  try {
    return read_snapshot(json::parse(text));
  } catch (const json::parse_error& e) {
    if (e.byte >= text.size()) {
      return Error{0, "truncated: the JSON document ends early (at byte " +
                          std::to_string(text.size()) + ")"};
    }
    // Where, never what: the parser's message quotes the text it read last, and the file may
    // be anything root was pointed at (issue 33: `diff` of a secret file printed its start).
    return Error{0, "not valid JSON (a syntax error at byte " + std::to_string(e.byte) + ")"};
  } catch (const json::out_of_range&) {
    // A number too large for any JSON number type, e.g. 1e999 (found by fuzzing).
    return Error{0, "not valid JSON (a number out of range)"};
  }
}

Result<Snapshot> read_snapshot(const json& doc) {
  if (!doc.is_object()) {
    return Error{0, std::string("expected a JSON object, found ") + doc.type_name()};
  }
  JsonReader r;
  Snapshot snap;
  const auto schema = r.integer(doc, "schema", "");
  if (r.failed()) return Error{0, r.error()};
  if (!schema) return Error{0, "no \"schema\" field: not a gpuclean snapshot"};
  if (*schema > kSchemaVersion) {
    return Error{0, "schema " + std::to_string(*schema) + " is newer than this gpuclean reads (" +
                        std::to_string(kSchemaVersion) + "); upgrade gpuclean"};
  }
  if (*schema < 1) return Error{0, "schema " + std::to_string(*schema) + " is not valid"};
  snap.schema = *schema;
  if (auto kind = r.string(doc, "kind", ""); kind && *kind != "snapshot") {
    return Error{0, "a \"" + *kind + "\" document, not a snapshot"};
  }
  snap.host = r.string(doc, "host", "");
  snap.time = r.string(doc, "time", "");
  if (const json* nvml = r.object(doc, "nvml", "")) {
    snap.nvml_state = r.string(*nvml, "state", "nvml");
    snap.driver_version = r.string(*nvml, "driver_version", "nvml");
    snap.nvml_version = r.string(*nvml, "nvml_version", "nvml");
    snap.cuda_driver_version = r.integer(*nvml, "cuda_driver_version", "nvml");
    // Unknown versions are null; snapshots written before 2026-12-03 have "": unknown too.
    if (snap.driver_version && snap.driver_version->empty()) snap.driver_version.reset();
    if (snap.nvml_version && snap.nvml_version->empty()) snap.nvml_version.reset();
  }
  // Without NVML there is no GPU list: an empty array then means "unknown", not "no GPUs".
  if (const json* gpus = r.array(doc, "gpus", "");
      gpus != nullptr && (!snap.nvml_state || *snap.nvml_state == "present")) {
    snap.gpus = read_gpus(r, *gpus);
  }
  // GPUs are matched by UUID (by index without one): a second GPU with the same UUID or index
  // would be matched to the first, and a file would differ from itself (found by fuzzing).
  if (snap.gpus) {
    std::map<std::string, std::size_t> uuids;
    std::map<unsigned, std::size_t> indexes;
    for (std::size_t i = 0; i < snap.gpus->size(); ++i) {
      const SnapshotGpu& gpu = (*snap.gpus)[i];
      const std::string path = "gpus[" + std::to_string(i) + "]";
      if (gpu.uuid && !gpu.uuid->empty()) {
        if (auto [at, added] = uuids.emplace(*gpu.uuid, i); !added) {
          return Error{0, path + ".uuid: the same as gpus[" + std::to_string(at->second) + "]'s"};
        }
      }
      if (auto [at, added] = indexes.emplace(gpu.index, i); !added) {
        return Error{0, path + ".index: the same as gpus[" + std::to_string(at->second) + "]'s"};
      }
    }
  }
  if (const json* holders = r.array(doc, "holders", "")) snap.holders = read_holders(r, *holders);
  if (const json* k = r.object(doc, "kernel_log", ""))
    snap.kernel_log = read_kernel_log_section(r, *k);
  if (const json* s = r.object(doc, "system", "")) snap.system = read_system(r, *s);
  if (r.failed()) return Error{0, r.error()};
  return snap;
}

}  // namespace gpuclean::input
