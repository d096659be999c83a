#include "output/history_view.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/escape.h"
#include "core/units.h"
#include "core/wall_time.h"

namespace gpuclean::output {
namespace {

using nlohmann::json;

json argv_json(const std::vector<std::string>& argv) {
  json list = json::array();
  for (const std::string& arg : argv) list.push_back(arg);
  return list;
}

json process_json(const RecordedProcess& p) {
  json out = {{"pid", p.pid},   {"start_ticks", p.start_ticks}, {"boot_id", p.boot_id},
              {"user", p.user}, {"argv", argv_json(p.argv)},    {"owner", nullptr}};
  if (!p.owner.empty()) out["owner"] = p.owner;
  out["parent"] = nullptr;
  if (p.parent_pid) {
    out["parent"] = {{"pid", *p.parent_pid},
                     {"start_ticks", p.parent_start_ticks ? json(*p.parent_start_ticks) : json()},
                     {"argv", argv_json(p.parent_argv)}};
  }
  return out;
}

json event_json(const HistoryEvent& event) {
  json out = {{"time", event.time}, {"kind", to_string(event.kind)}};
  out["process"] = event.process ? process_json(*event.process) : json();
  out["gpu"] = event.gpu ? json(*event.gpu) : json();
  out["bytes"] = event.bytes ? json(*event.bytes) : json();
  out["class"] = event.klass.empty() ? json() : json(event.klass);
  if (event.kind == HistoryEventKind::kAction) {
    json detail = json::parse(event.detail, nullptr, false);
    out["detail"] = detail.is_discarded() ? json(event.detail) : detail;
  } else {
    out["detail"] = event.detail.empty() ? json() : json(event.detail);
  }
  return out;
}

std::string who(const RecordedProcess& p) {
  return fmt::format("pid {} {}", p.pid, argv_text(p.argv, 60));
}

std::string parent_text(const RecordedProcess& p) {
  if (!p.parent_pid) return "";
  if (p.parent_argv.empty()) return fmt::format("parent {}", *p.parent_pid);
  return fmt::format("parent {} {}", *p.parent_pid, argv_text(p.parent_argv, 60));
}

// What an action's JSON says, in a line: "root ran gpuclean kill --pid 42 --yes: exit 0".
std::string action_text(const std::string& detail) {
  const json d = json::parse(detail, nullptr, false);
  if (!d.is_object()) return escape_terminal(detail);
  std::string text = escape_terminal(d.value("user", std::string("?")));
  std::vector<std::string> args;
  if (d.contains("args") && d["args"].is_array()) {
    for (const json& arg : d["args"]) {
      if (arg.is_string()) args.push_back(arg.get<std::string>());
    }
  }
  text += " ran gpuclean " + escape_terminal(d.value("command", std::string("?")));
  if (!args.empty()) text += " " + argv_text(args, 80);
  if (d.contains("exit") && d["exit"].is_number_integer()) {
    text += fmt::format(": exit {}", d["exit"].get<int>());
  }
  if (d.contains("summary") && d["summary"].is_string()) {
    text += " (" + escape_terminal(d["summary"].get<std::string>()) + ")";
  }
  return text;
}

std::string event_line(const HistoryEvent& e) {
  std::string what;
  const std::string gpu = e.gpu ? fmt::format("GPU {} ", *e.gpu) : "";
  switch (e.kind) {
    case HistoryEventKind::kAppeared: {
      const RecordedProcess& p = *e.process;
      what = fmt::format("{} ({}, {}", who(p), escape_terminal(p.user), e.klass);
      if (!p.owner.empty()) what += ", " + escape_terminal(recorded_owner_text(p.owner));
      if (const std::string parent = parent_text(p); !parent.empty()) what += "; " + parent;
      what += ")";
      break;
    }
    case HistoryEventKind::kLeft:
      what = fmt::format("{} left, holding {} at last sight", who(*e.process),
                         format_bytes(e.bytes.value_or(0)));
      if (!e.detail.empty()) what += " (" + escape_terminal(e.detail) + ")";
      break;
    case HistoryEventKind::kMemoryReturned:
      what = fmt::format("{}{} of pid {} free again, {} s after it left", gpu,
                         format_bytes(e.bytes.value_or(0)), e.process ? e.process->pid : 0,
                         escape_terminal(e.detail));
      break;
    case HistoryEventKind::kClassChanged:
      what = fmt::format("{}: {} -> {}", who(*e.process), e.detail, e.klass);
      if (e.klass == "orphan") {
        if (const std::string parent = parent_text(*e.process); !parent.empty()) {
          what += " (its " + parent + " is gone)";
        }
      }
      break;
    case HistoryEventKind::kMemoryChanged:
      what = fmt::format("{}{} now holds {}", gpu, who(*e.process), format_bytes(*e.bytes));
      break;
    case HistoryEventKind::kUnattributedAppeared:
      what = fmt::format("{}{} used that no live process accounts for", gpu,
                         format_bytes(e.bytes.value_or(0)));
      break;
    case HistoryEventKind::kUnattributedCleared:
      what = gpu + "unattributed memory cleared";
      break;
    case HistoryEventKind::kNvmlFailed:
      what = "NVML failed: " + escape_terminal(e.detail);
      break;
    case HistoryEventKind::kNvmlRecovered:
      what = "NVML answers again";
      break;
    case HistoryEventKind::kAction:
      what = action_text(e.detail);
      break;
    case HistoryEventKind::kRecorderStarted:
      what = "recorder started (" + escape_terminal(e.detail) + ")";
      break;
    case HistoryEventKind::kRecorderStopped:
      what = "recorder stopped";
      break;
  }
  return fmt::format("{}  {:<21} {}", format_local_time(e.time), to_string(e.kind), what);
}

}  // namespace

std::string argv_text(const std::vector<std::string>& argv, std::size_t max_chars) {
  std::string text;
  for (const std::string& arg : argv) {
    if (!text.empty()) text += ' ';
    text += shell_word(arg);
  }
  if (text.empty()) return "?";
  return escape_terminal(cut_for_display(text, max_chars));
}

std::string recorded_owner_text(const std::string& owner) {
  const std::size_t colon = owner.find(':');
  if (colon == std::string::npos) return owner;
  const std::string kind = owner.substr(0, colon);
  const std::string id = owner.substr(colon + 1);
  if (kind == "slurm-job") return "slurm job " + id;
  if (kind == "gpuclean-run") return "gpuclean run " + id;
  return kind + " " + id;
}

void render_history_text(std::ostream& out, const std::vector<HistoryEvent>& events) {
  if (events.empty()) {
    out << "No events in that range.\n";
    return;
  }
  for (const HistoryEvent& event : events) out << event_line(event) << '\n';
}

void render_history_json(std::ostream& out, const std::vector<HistoryEvent>& events) {
  json doc = {{"schema", 1}, {"events", json::array()}};
  for (const HistoryEvent& event : events) doc["events"].push_back(event_json(event));
  out << doc.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

void render_held_at_text(std::ostream& out, double time, const std::vector<HistoryHolder>& held) {
  out << "At " << format_local_time(time) << ", ";
  if (held.empty()) {
    out << "the recorder had no process holding a device.\n";
    return;
  }
  out << held.size() << (held.size() == 1 ? " process" : " processes") << " held a device:\n";
  for (const HistoryHolder& h : held) {
    std::string memory;
    for (const auto& [gpu, bytes] : h.gpu_memory) {
      if (bytes == 0) continue;
      memory += fmt::format("{}GPU {} {}", memory.empty() ? "" : ", ", gpu, format_bytes(bytes));
    }
    out << "  " << who(h.process) << " (" << escape_terminal(h.process.user) << ", " << h.klass
        << ")" << (memory.empty() ? "" : " " + memory);
    if (!h.process.owner.empty())
      out << ", " << escape_terminal(recorded_owner_text(h.process.owner));
    if (const std::string parent = parent_text(h.process); !parent.empty()) out << "; " << parent;
    out << '\n';
  }
}

void render_held_at_json(std::ostream& out, double time, const std::vector<HistoryHolder>& held) {
  json doc = {{"schema", 1}, {"at", time}, {"holders", json::array()}};
  for (const HistoryHolder& h : held) {
    json memory = json::object();
    for (const auto& [gpu, bytes] : h.gpu_memory) memory[std::to_string(gpu)] = bytes;
    doc["holders"].push_back(
        {{"process", process_json(h.process)}, {"class", h.klass}, {"gpu_memory", memory}});
  }
  out << doc.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace gpuclean::output
