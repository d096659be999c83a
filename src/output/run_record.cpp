#include "output/run_record.h"

#include <fmt/format.h>

#include "core/units.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/json_reader.h"
#include "output/who_view.h"

namespace gpuclean::output {
namespace {

using nlohmann::json;

template <typename T>
json optional_json(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

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
    events.push_back({{"t", e.t}, {"kind", std::string(to_string(e.kind))}, {"detail", e.detail}});
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
                         {"t", l.t},
                         {"devices", l.devices ? json(*l.devices) : json(nullptr)}});
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
  const json* gpus = r.array(doc, "gpus", top);
  for (std::size_t i = 0; gpus != nullptr && i < gpus->size(); ++i) {
    const json& g = (*gpus)[i];
    const std::string path = fmt::format("gpus[{}]", i);
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
  }
  const json* samples = r.array(doc, "samples", top);
  for (std::size_t i = 0; samples != nullptr && i < samples->size(); ++i) {
    const json& s = (*samples)[i];
    const std::string path = fmt::format("samples[{}]", i);
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
  }
  const json* events = r.array(doc, "events", top);
  for (std::size_t i = 0; events != nullptr && i < events->size(); ++i) {
    const json& e = (*events)[i];
    const std::string path = fmt::format("events[{}]", i);
    RunEvent event;
    set_if_present(event.t, r.number(e, "t", path));
    set_if_present(event.kind, r.choice(e, "kind", path, run_event_kind_from_string));
    set_if_present(event.detail, r.string(e, "detail", path));
    record.events.push_back(std::move(event));
  }
  const json* leftovers = r.array(doc, "leftovers", top);
  for (std::size_t i = 0; leftovers != nullptr && i < leftovers->size(); ++i) {
    const json& l = (*leftovers)[i];
    const std::string path = fmt::format("leftovers[{}]", i);
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
  }
  if (r.failed()) return Error{0, r.error()};
  return record;
}

namespace {

// At most this many leftovers get a line of their own: a workload that forked thousands must
// not bury the rest of the summary (--record has every one).
constexpr std::size_t kLeftoverLines = 20;
// Device files named in a leftover's line; the rest are counted.
constexpr std::size_t kDevicesNamed = 3;

// "holding /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm and 2 more"; "" when not known.
std::string holding_text(const RunLeftover& l) {
  if (!l.devices) return "";
  // Gone before any signal: it may have been gone when its descriptors were read, too.
  if (l.devices->empty()) return l.signals.empty() ? "" : ", holding no GPU device file";
  std::string text = ", holding ";
  for (std::size_t i = 0; i < l.devices->size() && i < kDevicesNamed; ++i) {
    text += (i > 0 ? ", " : "") + escape_terminal((*l.devices)[i]);
  }
  if (l.devices->size() > kDevicesNamed) {
    text += fmt::format(" and {} more", l.devices->size() - kDevicesNamed);
  }
  return text;
}

// How the teardown ended it, from the signals it was sent: "ended by SIGTERM", "ended by
// SIGKILL after SIGTERM", "gone before any signal".
std::string ended_text(const RunLeftover& l) {
  std::vector<std::string> sent;  // the ending signals, without STOP and CONT
  for (const std::string& s : l.signals) {
    if (s != "STOP" && s != "CONT") sent.push_back("SIG" + s);
  }
  if (sent.empty()) return "gone before any signal";
  std::string text = "ended by " + sent.back();
  if (sent.size() > 1) {
    text += " after " + fmt::format("{}", fmt::join(sent.begin(), sent.end() - 1, ", "));
  }
  return text;
}

// One line per leftover (pid, command, what it held, how it ended); one that survived is a
// problem, and so is every one when `leftovers_fail` (--fail-on-leftovers).
void add_leftover_lines(std::vector<SummaryLine>& lines, const RunRecord& record,
                        bool leftovers_fail) {
  std::size_t shown = 0;
  for (const RunLeftover& l : record.leftovers) {
    const bool remaining = l.outcome == LeftoverOutcome::kRemaining;
    if (!remaining && shown >= kLeftoverLines) continue;  // survivors are always named
    ++shown;
    ProcessInfo process;  // status's way: the program's name without its directory
    process.comm = l.comm;
    process.cmdline = l.cmdline;
    const std::string who =
        fmt::format("pid {} ({}){}", l.pid, command_label(process, 60), holding_text(l));
    if (remaining) {
      lines.push_back({fmt::format("STILL RUNNING: {}: {}", who, l.reason), true});
    } else if (l.outcome == LeftoverOutcome::kSkipped) {
      lines.push_back({fmt::format("left behind: {}: {}", who, l.reason), leftovers_fail});
    } else {
      lines.push_back({fmt::format("left behind: {}: {}", who, ended_text(l)), leftovers_fail});
    }
  }
  if (record.leftovers.size() > shown) {
    lines.push_back({fmt::format("… and {} more left behind (gpuclean run --record FILE lists "
                                 "every one)",
                                 record.leftovers.size() - shown),
                     leftovers_fail});
  }
}

}  // namespace

std::vector<SummaryLine> run_summary_lines(const RunRecord& record, bool leftovers_fail) {
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
  // "ended by signal 15 after 2.5 s, torn down at a second interrupt" (issue 50: "ended by
  // signal 15 after a second interrupt after 2.5 s").
  const std::string torn_down =
      record.end == WorkloadEnd::kInterrupted ? ", torn down at a second interrupt" : "";
  lines.push_back({fmt::format("workload {} after {:.1f} s{}; exit code {}", ended,
                               record.workload_seconds.value_or(record.duration), torn_down,
                               record.exit_code)});
  std::size_t gone = 0;
  for (const RunLeftover& l : record.leftovers) {
    if (l.outcome == LeftoverOutcome::kGone) ++gone;
  }
  if (record.leftovers.empty()) {
    lines.push_back({"nothing was left behind"});
  } else {
    lines.push_back(
        {fmt::format("{} left-behind process{} found at teardown, {} ended{}",
                     record.leftovers.size(), record.leftovers.size() == 1 ? "" : "es", gone,
                     leftovers_fail ? " (--fail-on-leftovers: the run fails)" : ""),
         leftovers_fail});
  }
  add_leftover_lines(lines, record, leftovers_fail);
  for (const std::string& e : record.escaped) lines.push_back({"outside the run: " + e, true});
  if (record.gpu_check == GpuCheck::kNone) {
    // Without NVML nothing says the memory came back: said, never left for "back" (issue 50).
    lines.push_back({"GPU memory not checked: no NVML (--no-nvml, or no NVIDIA driver)"});
  }
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

nlohmann::json run_action_json(const RunRecord& record, int exit_code) {
  std::vector<std::string> args(
      record.command.begin(),
      record.command.begin() +
          static_cast<std::ptrdiff_t>(std::min<std::size_t>(record.command.size(), 64)));
  args.insert(args.begin(), "--");
  const std::size_t leftovers = record.leftovers.size();
  std::string summary =
      std::to_string(leftovers) + (leftovers == 1 ? " leftover torn down" : " leftovers torn down");
  summary += ", GPU check: " + std::string(to_string(record.gpu_check));
  if (!record.escaped.empty()) summary += ", " + std::to_string(record.escaped.size()) + " escaped";
  return {{"command", "run"},
          {"args", args},
          {"exit", exit_code},
          {"pid", record.pid ? nlohmann::json(*record.pid) : nlohmann::json()},
          {"cgroup", record.cgroup},
          {"clean", record.clean},
          {"summary", summary}};
}

}  // namespace gpuclean::output
