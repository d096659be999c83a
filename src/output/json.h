// JSON renderings of the report model (docs/reference.md "JSON"), built with nlohmann::json.
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model.h"

namespace gpuclean::output {

// "2026-11-30T12:43:18Z" (UTC, whole seconds).
std::string rfc3339(double unix_seconds);

// An optional fact as JSON: its value, or null when unknown.
template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

// A text fact the model keeps as "" when unknown (a driver version without NVML), as JSON's
// null: unknown facts are null in every document (docs/reference.md "Conventions").
nlohmann::json text_or_null(const std::string& text);

// {"GPU index": bytes}: a process's memory per GPU.
nlohmann::json gpu_memory_json(const std::map<unsigned, Bytes>& memory);

// The fields every document starts with: schema, host, time.
nlohmann::json document_header(const std::string& host, double now);

// docs/reference.md's holder fields; "evidence" is to_json(heir evidence) for an heir, else null.
nlohmann::json to_json(const Holder& holder);
// {kind, id, step, unit, pod_uid, qos, runtime, full_id}: whose work a process is (absent
// members null).
nlohmann::json to_json(const Owner& owner);
// {kind, dead_owner, text}: what ties an heir to its dead owner.
nlohmann::json to_json(const HeirEvidence& evidence);
// {pid, gpu_memory, candidates [{pid, evidence}], heir, ambiguous, why_no_heir}.
nlohmann::json to_json(const DeadOwner& owner);
nlohmann::json to_json(const ScanStats& stats);
nlohmann::json to_json(const Problem& problem);
// A DRM node's kind and GPU ({"kind": "render", "pci_address": "0000:c3:00.0"}), or null.
nlohmann::json to_json(const std::optional<DrmNode>& node);
nlohmann::json to_json(const DeviceFile& file);
// NVML's fields of one GPU (index, uuid, name, pci_bus_id, minor, memory, modes, processes).
nlohmann::json to_json(const Gpu& gpu);
// to_json(gpu) with the diagnosis's "attributed" and "unattributed" added to "memory".
nlohmann::json to_json(const GpuReport& report);
// driver_version, nvml_version, cuda_driver_version and "gpus".
nlohmann::json to_json(const GpuView& view);

// A JSON array of to_json(item) for each item.
template <typename T>
nlohmann::json to_json_array(const std::vector<T>& items) {
  nlohmann::json out = nlohmann::json::array();
  for (const T& item : items) out.push_back(to_json(item));
  return out;
}

// Writes one document and a newline. Bytes that are not UTF-8 (command lines are arbitrary
// bytes) become U+FFFD so the output is always valid JSON.
void write_json(std::ostream& out, const nlohmann::json& document);

}  // namespace gpuclean::output
