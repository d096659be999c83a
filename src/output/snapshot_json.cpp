#include "output/snapshot_json.h"

#include <charconv>
#include <map>

#include "output/json.h"

namespace gpuclean::output {
namespace {

using nlohmann::json;

json clock_domain(std::optional<unsigned> current, std::optional<unsigned> application,
                  std::optional<unsigned> max) {
  return {
      {"current", or_null(current)}, {"application", or_null(application)}, {"max", or_null(max)}};
}

void add_details(json& gpu, const GpuDetails& d) {
  gpu["clocks"] = {
      {"sm", clock_domain(d.clocks.sm_mhz, d.application_clocks.sm_mhz, d.max_clocks.sm_mhz)},
      {"memory", clock_domain(d.clocks.memory_mhz, d.application_clocks.memory_mhz,
                              d.max_clocks.memory_mhz)}};
  gpu["throttle_reasons"] = d.throttle_reasons
                                ? json{{"mask", *d.throttle_reasons},
                                       {"active", throttle_reason_names(*d.throttle_reasons)}}
                                : json();
  gpu["temperature_c"] = or_null(d.temperature_c);
  gpu["power_limit_mw"] = or_null(d.power_limit_mw);
  gpu["ecc"] = {{"enabled", or_null(d.ecc_enabled)},
                {"pending_enabled", or_null(d.ecc_pending_enabled)},
                {"volatile",
                 {{"corrected", or_null(d.ecc_errors.volatile_corrected)},
                  {"uncorrected", or_null(d.ecc_errors.volatile_uncorrected)}}},
                {"aggregate",
                 {{"corrected", or_null(d.ecc_errors.aggregate_corrected)},
                  {"uncorrected", or_null(d.ecc_errors.aggregate_uncorrected)}}}};
  gpu["retired_pages"] = {{"single_bit_ecc", or_null(d.retired_pages_single_bit)},
                          {"double_bit_ecc", or_null(d.retired_pages_double_bit)}};
  gpu["remapped_rows"] = {{"correctable", or_null(d.remapped_rows_correctable)},
                          {"uncorrectable", or_null(d.remapped_rows_uncorrectable)},
                          {"pending", or_null(d.remapping_pending)},
                          {"failed", or_null(d.remapping_failed)}};
}

json xid_json(const XidEvent& event) {
  return {{"seconds_since_boot", event.seconds_since_boot},
          {"xid", event.xid},
          {"device", event.device},
          {"message", event.message}};
}

}  // namespace

json snapshot_document(const SnapshotInputs& inputs) {
  const StatusReport& report = inputs.report;
  json doc = document_header(report.host, report.time);
  doc["kind"] = "snapshot";
  doc["nvml"] = {{"state", to_string(report.nvml_state)},
                 {"message", report.nvml_message},
                 {"driver_version", text_or_null(report.driver_version)},
                 {"nvml_version", text_or_null(inputs.nvml_version)},
                 {"cuda_driver_version", or_null(report.cuda_driver_version)}};
  json gpus = json::array();
  for (const GpuReport& g : report.diagnosis.gpus) {
    json j = to_json(g);
    for (const GpuDetails& d : inputs.details) {
      if (d.index == g.gpu.index) add_details(j, d);
    }
    gpus.push_back(std::move(j));
  }
  doc["gpus"] = std::move(gpus);
  doc["holders"] = to_json_array(report.diagnosis.holders);
  doc["kernel_log"] = {
      {"readable", inputs.kernel_log.readable},
      {"error", inputs.kernel_log.readable ? json() : json(inputs.kernel_log.error)},
      {"xid", json::array()}};
  for (const XidEvent& event : inputs.kernel_log.xids) {
    doc["kernel_log"]["xid"].push_back(xid_json(event));
  }
  const HostFacts& s = inputs.system;
  doc["system"] = {{"kernel_release", or_null(s.kernel_release)},
                   {"kernel_version", or_null(s.kernel_version)},
                   {"boot_id", or_null(s.boot_id)},
                   {"cpu_governor", or_null(s.cpu_governor)},
                   {"environment", s.environment}};
  return doc;
}

}  // namespace gpuclean::output
