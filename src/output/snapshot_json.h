// The `gpuclean snapshot` document, written and read back in one place so the two cannot drift.
// The writer renders what was gathered; the reader turns any snapshot document (this version's,
// an older one with fields missing, a hand-edited one) into the comparison model that
// diagnose/snapshot_diff.h compares. `diff A B` and `check --against` read even the "now" side
// through the reader, so both sides of a comparison always went through the same code.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/snapshot.h"
#include "output/status_view.h"

namespace gpuclean::output {

struct SnapshotInputs {
  const StatusReport& report;  // host, time, NVML state and versions, GPUs, holders
  std::string nvml_version;
  const std::vector<GpuDetails>& details;  // by GPU index; GPUs without an entry: unknown
  const HostFacts& system;
  const KernelLog& kernel_log;
};

// {"schema": 1, "kind": "snapshot", "host", "time", "nvml": {state, message, driver_version,
//  nvml_version, cuda_driver_version}, "gpus": [status's GPU fields + "clocks" {sm, memory:
//  {current, application, max} MHz}, "throttle_reasons" {mask, active}, "temperature_c",
//  "power_limit_mw", "ecc" {enabled, pending_enabled, volatile/aggregate {corrected,
//  uncorrected}}, "retired_pages" {single_bit_ecc, double_bit_ecc}, "remapped_rows"
//  {correctable, uncorrectable, pending, failed}], "holders": [status's holders],
//  "kernel_log": {readable, error, xid: [{seconds_since_boot, xid, device, message}]},
//  "system": {kernel_release, kernel_version, boot_id, cpu_governor, environment}}.
// Unknown facts are null.
nlohmann::json snapshot_document(const SnapshotInputs& inputs);

}  // namespace gpuclean::output
