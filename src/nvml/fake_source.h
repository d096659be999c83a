// FakeGpuSource: a GPU view described in JSON, for tests without a GPU (hidden CLI flag
// --test-gpu-source FILE). The format mirrors the model:
//   {"state": "present" | "absent" | "failed",      (default "present")
//    "message": "why absent/failed",
//    "fail_query": "…",                              (optional: query() fails with this text)
//    "driver_version": "580.159.04", "nvml_version": "13.580.159.04", "cuda_driver_version": 13000,
//    "gpus": [{"index": 0, "uuid": "GPU-…", "name": "NVIDIA H200", "pci_bus_id": "…",
//              "minor": 0, "memory": {"total": B, "used": B, "free": B, "reserved": B},
//              "persistence_mode": true, "compute_mode": "default", "mig_enabled": false,
//              "processes": [{"pid": 123, "used_memory": B, "kind": "compute"}]}]}
//    "later": {"when_exists": "PATH", "gpus": [...] | "fail_query": "…"}   (optional: once PATH
//             exists, query() gives these GPUs instead, or fails — a GPU changing mid-test)
//    "answered_mark": "PATH"   (optional: one byte appended per query() answered, so that a
//             test's workload can change the GPU only after the first answer — run's pre-run
//             level — without guessing how long that takes)
// Snapshot-only facts go flat in each GPU object, named as GpuDetails' members: "clocks_sm",
// "clocks_memory", "application_clocks_sm", "max_clocks_memory", "throttle_reasons" (bit mask),
// "temperature_c", "power_limit_mw", "ecc_enabled", "ecc_pending_enabled",
// "ecc_volatile_corrected", "ecc_aggregate_uncorrected", …, "retired_pages_single_bit",
// "retired_pages_double_bit", "remapped_rows_correctable", "remapped_rows_uncorrectable",
// "remapping_pending", "remapping_failed". Absent keys are facts the GPU does not report.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "nvml/gpu_source.h"

namespace gpuclean::nvml {

// The versions and "gpus" of the format above (what output::to_json(GpuView) writes) as a
// view. Throws nlohmann::json::exception on a malformed document; callers catch it.
GpuView gpu_view_from_json(const nlohmann::json& doc);

// One GPU's snapshot-only facts in the flat form above ("index" plus the known facts), both
// ways: the NVML helper process sends snapshot's details to gpuclean in it.
GpuDetails gpu_details_from_json(const nlohmann::json& gpu);
nlohmann::json gpu_details_to_json(const GpuDetails& details);

// Reads the description; a missing or malformed file gives state kFailed with the reason.
OpenedSource open_fake_source(const std::string& path);

}  // namespace gpuclean::nvml
