#include "output/run_record.h"

#include <fmt/format.h>

#include "core/units.h"
#include "output/escape.h"
#include "output/json.h"

namespace gpuclean::output {
namespace {

using nlohmann::json;

template <typename T>
json optional_json(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

// Reading: each getter leaves `out` alone when the field is absent or null, and records the
// first mistyped field in `problem` (a record we cannot trust is refused as a whole).
class Reader {
 public:
  explicit Reader(std::string& problem) : problem_(problem) {}

  template <typename T>
  void get(const json& object, const char* key, T& out, const std::string& where) {
    if (!object.is_object() || !object.contains(key) || object[key].is_null()) return;
    const json& value = object[key];
    if constexpr (std::is_same_v<T, std::string>) {
      if (!value.is_string()) return fail(where + "." + key + " is not a string");
      out = value.get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!value.is_boolean()) return fail(where + "." + key + " is not true/false");
      out = value.get<bool>();
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      if (!value.is_array()) return fail(where + "." + key + " is not an array");
      out.clear();
      for (const json& item : value) {
        if (!item.is_string()) return fail(where + "." + key + " holds a non-string");
        out.push_back(item.get<std::string>());
      }
    } else {
      if (!value.is_number()) return fail(where + "." + key + " is not a number");
      if constexpr (std::is_unsigned_v<T>) {
        if (!value.is_number_unsigned()) return fail(where + "." + key + " is negative");
      }
      out = value.get<T>();
    }
  }

  template <typename T>
  void get(const json& object, const char* key, std::optional<T>& out, const std::string& where) {
    if (!object.is_object() || !object.contains(key) || object[key].is_null()) return;
    T value{};
    get(object, key, value, where);
    out = value;
  }

  // A state written with to_string: `parse` (one of the *_from_string functions) must know it.
  template <typename E, typename Parse>
  void get_enum(const json& object, const char* key, E& out, const std::string& where,
                Parse parse) {
    std::string text;
    if (!object.is_object() || !object.contains(key) || object[key].is_null()) return;
    get(object, key, text, where);
    if (!object[key].is_string() || text.empty()) return;  // empty: as if absent
    if (auto value = parse(text)) {
      out = *value;
    } else {
      fail(where + "." + key + " \"" + text + "\" is not one gpuclean writes");
    }
  }
  template <typename E, typename Parse>
  void get_enum(const json& object, const char* key, std::optional<E>& out,
                const std::string& where, Parse parse) {
    if (!object.is_object() || !object.contains(key) || object[key].is_null()) return;
    E value{};
    get_enum(object, key, value, where, parse);
    out = value;
  }

  // The array `key` of `object`, or an empty one; a non-array is a problem.
  const json& array(const json& object, const char* key) {
    static const json empty = json::array();
    if (!object.is_object() || !object.contains(key) || object[key].is_null()) return empty;
    if (!object[key].is_array()) {
      fail(std::string(key) + " is not an array");
      return empty;
    }
    return object[key];
  }

  void fail(const std::string& what) {
    if (problem_.empty()) problem_ = what;
  }

 private:
  std::string& problem_;
};

}  // namespace

json to_json(const RunRecord& record, const std::string& host) {
  json doc = document_header(host, record.started_at);
  doc["kind"] = "run";
  doc["command"] = record.command;
  doc["mode"] = record.mode;
  doc["cgroup"] = record.cgroup.empty() ? json(nullptr) : json(record.cgroup);
  doc["mode_note"] = record.mode_note;
  doc["started_at"] = record.started_at;
  doc["duration"] = record.duration;
  doc["workload_seconds"] = optional_json(record.workload_seconds);
  doc["pid"] = optional_json(record.pid);
  doc["end"] = record.end ? std::string(to_string(*record.end)) : std::string();
  doc["exit_status"] = optional_json(record.exit_status);
  doc["exit_signal"] = optional_json(record.exit_signal);
  doc["exit_code"] = record.exit_code;
  doc["gpu_source"] = record.gpu_source;
  doc["gpu_check"] = std::string(to_string(record.gpu_check));
  doc["clean"] = record.clean;
  json gpus = json::array();
  for (const RunGpu& gpu : record.gpus) {
    gpus.push_back({{"index", gpu.index},
                    {"name", gpu.name},
                    {"uuid", gpu.uuid},
                    {"total", optional_json(gpu.total)},
                    {"baseline", optional_json(gpu.baseline)},
                    {"peak", optional_json(gpu.peak)},
                    {"after", optional_json(gpu.after)},
                    {"back", optional_json(gpu.back)},
                    {"note", gpu.note}});
  }
  doc["gpus"] = std::move(gpus);
  json samples = json::array();
  for (const RunSample& sample : record.samples) {
    json used = json::array();
    for (const auto& bytes : sample.used) used.push_back(optional_json(bytes));
    samples.push_back({{"t", sample.t}, {"used", std::move(used)}});
  }
  doc["samples"] = std::move(samples);
  json events = json::array();
  for (const RunEvent& e : record.events) {
    events.push_back({{"t", e.t}, {"kind", e.kind}, {"detail", e.detail}});
  }
  doc["events"] = std::move(events);
  json leftovers = json::array();
  for (const RunLeftover& l : record.leftovers) {
    leftovers.push_back({{"pid", l.pid},
                         {"ppid", l.ppid},
                         {"comm", l.comm},
                         {"cmdline", l.cmdline},
                         {"signals", l.signals},
                         {"outcome", std::string(to_string(l.outcome))},
                         {"reason", l.reason},
                         {"t", l.t}});
  }
  doc["leftovers"] = std::move(leftovers);
  doc["escaped"] = record.escaped;
  return doc;
}

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
  std::string problem;
  Reader r(problem);
  RunRecord record;
  r.get(doc, "command", record.command, "record");
  r.get(doc, "mode", record.mode, "record");
  r.get(doc, "cgroup", record.cgroup, "record");
  r.get(doc, "mode_note", record.mode_note, "record");
  r.get(doc, "started_at", record.started_at, "record");
  r.get(doc, "duration", record.duration, "record");
  r.get(doc, "workload_seconds", record.workload_seconds, "record");
  r.get(doc, "pid", record.pid, "record");
  r.get_enum(doc, "end", record.end, "record", workload_end_from_string);
  r.get(doc, "exit_status", record.exit_status, "record");
  r.get(doc, "exit_signal", record.exit_signal, "record");
  r.get(doc, "exit_code", record.exit_code, "record");
  r.get(doc, "gpu_source", record.gpu_source, "record");
  r.get_enum(doc, "gpu_check", record.gpu_check, "record", gpu_check_from_string);
  r.get(doc, "clean", record.clean, "record");
  r.get(doc, "escaped", record.escaped, "record");
  for (const json& g : r.array(doc, "gpus")) {
    RunGpu gpu;
    r.get(g, "index", gpu.index, "gpus[]");
    r.get(g, "name", gpu.name, "gpus[]");
    r.get(g, "uuid", gpu.uuid, "gpus[]");
    r.get(g, "total", gpu.total, "gpus[]");
    r.get(g, "baseline", gpu.baseline, "gpus[]");
    r.get(g, "peak", gpu.peak, "gpus[]");
    r.get(g, "after", gpu.after, "gpus[]");
    r.get(g, "back", gpu.back, "gpus[]");
    r.get(g, "note", gpu.note, "gpus[]");
    record.gpus.push_back(std::move(gpu));
  }
  for (const json& s : r.array(doc, "samples")) {
    RunSample sample;
    r.get(s, "t", sample.t, "samples[]");
    for (const json& used : r.array(s, "used")) {
      if (used.is_null()) {
        sample.used.emplace_back();
      } else if (used.is_number_unsigned()) {
        sample.used.emplace_back(used.get<Bytes>());
      } else {
        r.fail("samples[].used holds something that is not a byte count");
      }
    }
    if (sample.used.size() != record.gpus.size()) {
      r.fail(fmt::format("a sample has {} values for {} GPUs", sample.used.size(),
                         record.gpus.size()));
    }
    record.samples.push_back(std::move(sample));
  }
  for (const json& e : r.array(doc, "events")) {
    RunEvent event;
    r.get(e, "t", event.t, "events[]");
    r.get(e, "kind", event.kind, "events[]");
    r.get(e, "detail", event.detail, "events[]");
    record.events.push_back(std::move(event));
  }
  for (const json& l : r.array(doc, "leftovers")) {
    RunLeftover leftover;
    r.get(l, "pid", leftover.pid, "leftovers[]");
    r.get(l, "ppid", leftover.ppid, "leftovers[]");
    r.get(l, "comm", leftover.comm, "leftovers[]");
    r.get(l, "cmdline", leftover.cmdline, "leftovers[]");
    r.get(l, "signals", leftover.signals, "leftovers[]");
    r.get_enum(l, "outcome", leftover.outcome, "leftovers[]", leftover_outcome_from_string);
    r.get(l, "reason", leftover.reason, "leftovers[]");
    r.get(l, "t", leftover.t, "leftovers[]");
    record.leftovers.push_back(std::move(leftover));
  }
  if (!problem.empty()) return Error{0, problem};
  return record;
}

std::vector<SummaryLine> run_summary_lines(const RunRecord& record) {
  std::vector<SummaryLine> lines;
  std::string ended;
  if (record.end == WorkloadEnd::kTimeout) {
    ended = "timed out";
  } else if (record.exit_signal) {
    ended = fmt::format("ended by signal {}", *record.exit_signal);
  } else if (record.exit_status) {
    ended = fmt::format("exited {}", *record.exit_status);
  } else {
    ended = "ended";
  }
  if (record.end == WorkloadEnd::kInterrupted) ended += " after a second interrupt";
  lines.push_back(
      {fmt::format("workload {} after {:.1f} s; exit code {}", ended,
                   record.workload_seconds.value_or(record.duration), record.exit_code)});
  std::size_t gone = 0;
  std::vector<const RunLeftover*> remaining;
  for (const RunLeftover& l : record.leftovers) {
    if (l.outcome == LeftoverOutcome::kGone) ++gone;
    if (l.outcome == LeftoverOutcome::kRemaining) remaining.push_back(&l);
  }
  if (record.leftovers.empty()) {
    lines.push_back({"nothing was left behind"});
  } else {
    lines.push_back(
        {fmt::format("{} left-behind process{} found at teardown, {} ended",
                     record.leftovers.size(), record.leftovers.size() == 1 ? "" : "es", gone)});
  }
  for (const RunLeftover* l : remaining) {
    const std::vector<std::string> argv =
        l->cmdline.empty() ? std::vector<std::string>{l->comm} : l->cmdline;
    lines.push_back({fmt::format("STILL RUNNING: pid {} ({}): {}", l->pid,
                                 display_command(argv, 80), l->reason),
                     true});
  }
  for (const std::string& e : record.escaped) lines.push_back({"outside the run: " + e, true});
  if (record.gpu_check == GpuCheck::kNotChecked) {
    const std::string why = record.gpus.empty() ? "" : ": " + record.gpus.front().note;
    lines.push_back({"GPU memory NOT verified" + why, true});
  }
  for (const RunGpu& gpu : record.gpus) {
    if (!gpu.back) continue;
    if (*gpu.back) {
      lines.push_back({fmt::format("GPU {}: back to the pre-run level ({} used, peak {}){}",
                                   gpu.index, gpu.after ? format_bytes(*gpu.after) : "?",
                                   gpu.peak ? format_bytes(*gpu.peak) : "?",
                                   gpu.note.empty() ? "" : "; " + gpu.note)});
    } else {
      lines.push_back({fmt::format("GPU {}: NOT back: {}", gpu.index, gpu.note), true});
    }
  }
  return lines;
}

}  // namespace gpuclean::output
