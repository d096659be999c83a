#include "output/run_record.h"

#include <fmt/format.h>

#include "core/units.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/who_view.h"

namespace gpuclean::output {
namespace {
using nlohmann::json;
}  // namespace

json to_json(const RunRecord& record, const std::string& host) {
  json doc = document_header(host, record.started_at);
  doc["kind"] = "run";
  doc["command"] = record.command;
  doc["mode"] = record.mode;
  doc["cgroup"] = text_or_null(record.cgroup);
  doc["mode_note"] = record.mode_note;
  doc["started_at"] = record.started_at;
  doc["duration"] = record.duration;
  doc["workload_seconds"] = or_null(record.workload_seconds);
  doc["pid"] = or_null(record.pid);
  doc["end"] = record.end ? std::string(to_string(*record.end)) : std::string();
  doc["exit_status"] = or_null(record.exit_status);
  doc["exit_signal"] = or_null(record.exit_signal);
  doc["exit_code"] = record.exit_code;
  doc["gpu_source"] = record.gpu_source;
  doc["gpu_check"] = std::string(to_string(record.gpu_check));
  doc["clean"] = record.clean;
  json gpus = json::array();
  for (const RunGpu& gpu : record.gpus) {
    gpus.push_back({{"index", gpu.index},
                    {"name", gpu.name},
                    {"uuid", gpu.uuid},
                    {"total", or_null(gpu.total)},
                    {"baseline", or_null(gpu.baseline)},
                    {"peak", or_null(gpu.peak)},
                    {"after", or_null(gpu.after)},
                    {"back", or_null(gpu.back)},
                    {"note", gpu.note}});
  }
  doc["gpus"] = std::move(gpus);
  json samples = json::array();
  for (const RunSample& sample : record.samples) {
    json used = json::array();
    for (const auto& bytes : sample.used) used.push_back(or_null(bytes));
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
                         {"devices", or_null(l.devices)}});
  }
  doc["leftovers"] = std::move(leftovers);
  doc["escaped"] = record.escaped;
  return doc;
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
  return {{"command", "run"},        {"args", args},
          {"exit", exit_code},       {"pid", or_null(record.pid)},
          {"cgroup", record.cgroup}, {"clean", record.clean},
          {"summary", summary}};
}

}  // namespace gpuclean::output
