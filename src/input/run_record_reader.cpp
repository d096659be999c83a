#include "input/run_record_reader.h"

#include <fmt/format.h>

#include "input/json_reader.h"

namespace gpuclean::input {

using nlohmann::json;

Result<RunRecord> parse_run_record(std::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{0, "not valid JSON"};
  if (!doc.is_object()) return Error{0, "not a JSON object"};
  if (!doc.contains("schema") || !doc["schema"].is_number_integer()) {
    return Error{0, "no \"schema\" number: not a gpuclean document"};
  }
  if (doc["schema"].get<long long>() != kSchemaVersion) {
    return Error{0, fmt::format("schema {} is not one this gpuclean reads (it reads {})",
                                doc["schema"].dump(), kSchemaVersion)};
  }
  if (!doc.contains("kind") || doc["kind"] != "run") {
    return Error{0,
                 "not a run record (no \"kind\": \"run\"; write one with gpuclean run --record)"};
  }
  JsonReader r;
  RunRecord record;
  const std::string top = "record";
  set_if_present(record.command, r.strings(doc, "command", top));
  set_if_present(record.mode, r.string(doc, "mode", top));
  set_if_present(record.cgroup, r.string(doc, "cgroup", top));
  set_if_present(record.mode_note, r.string(doc, "mode_note", top));
  set_if_present(record.started_at, r.number(doc, "started_at", top));
  set_if_present(record.duration, r.number(doc, "duration", top));
  set_if_present(record.workload_seconds, r.number(doc, "workload_seconds", top));
  set_if_present(record.pid, r.count<Pid>(doc, "pid", top));
  // "end" is "" in a record written before the workload ended: as if absent.
  if (const auto end = r.string(doc, "end", top); end && !end->empty()) {
    record.end = r.choice(doc, "end", top, workload_end_from_string);
  }
  set_if_present(record.exit_status, r.integer(doc, "exit_status", top));
  set_if_present(record.exit_signal, r.integer(doc, "exit_signal", top));
  set_if_present(record.exit_code, r.integer(doc, "exit_code", top));
  set_if_present(record.gpu_source, r.string(doc, "gpu_source", top));
  set_if_present(record.gpu_check, r.choice(doc, "gpu_check", top, gpu_check_from_string));
  set_if_present(record.clean, r.boolean(doc, "clean", top));
  set_if_present(record.escaped, r.strings(doc, "escaped", top));
  r.each(doc, "gpus", top, [&](const json& g, const std::string& path) {
    RunGpu gpu;
    set_if_present(gpu.index, r.count<unsigned>(g, "index", path));
    set_if_present(gpu.name, r.string(g, "name", path));
    set_if_present(gpu.uuid, r.string(g, "uuid", path));
    gpu.total = r.count<Bytes>(g, "total", path);
    gpu.baseline = r.count<Bytes>(g, "baseline", path);
    gpu.peak = r.count<Bytes>(g, "peak", path);
    gpu.after = r.count<Bytes>(g, "after", path);
    gpu.back = r.boolean(g, "back", path);
    set_if_present(gpu.note, r.string(g, "note", path));
    record.gpus.push_back(std::move(gpu));
  });
  r.each(doc, "samples", top, [&](const json& s, const std::string& path) {
    RunSample sample;
    set_if_present(sample.t, r.number(s, "t", path));
    const json* used = r.array(s, "used", path);
    for (std::size_t k = 0; used != nullptr && k < used->size(); ++k) {
      const json& bytes = (*used)[k];
      if (bytes.is_null()) {
        sample.used.emplace_back();
      } else if (auto value = JsonReader::non_negative(bytes)) {
        sample.used.emplace_back(*value);
      } else {
        r.report(fmt::format("{}.used[{}]", path, k),
                 std::string("expected a byte count or null, found ") + bytes.type_name());
      }
    }
    if (sample.used.size() != record.gpus.size()) {
      r.report(path, fmt::format("{} values for {} GPUs", sample.used.size(), record.gpus.size()));
    }
    record.samples.push_back(std::move(sample));
  });
  r.each(doc, "events", top, [&](const json& e, const std::string& path) {
    RunEvent event;
    set_if_present(event.t, r.number(e, "t", path));
    set_if_present(event.kind, r.choice(e, "kind", path, run_event_kind_from_string));
    set_if_present(event.detail, r.string(e, "detail", path));
    record.events.push_back(std::move(event));
  });
  r.each(doc, "leftovers", top, [&](const json& l, const std::string& path) {
    RunLeftover leftover;
    set_if_present(leftover.pid, r.count<Pid>(l, "pid", path));
    set_if_present(leftover.ppid, r.count<Pid>(l, "ppid", path));
    set_if_present(leftover.comm, r.string(l, "comm", path));
    set_if_present(leftover.cmdline, r.strings(l, "cmdline", path));
    set_if_present(leftover.signals, r.strings(l, "signals", path));
    set_if_present(leftover.outcome, r.choice(l, "outcome", path, leftover_outcome_from_string));
    set_if_present(leftover.reason, r.string(l, "reason", path));
    set_if_present(leftover.t, r.number(l, "t", path));
    leftover.devices = r.strings(l, "devices", path);  // absent or null: not known
    record.leftovers.push_back(std::move(leftover));
  });
  if (r.failed()) return Error{0, r.error()};
  return record;
}

}  // namespace gpuclean::input
