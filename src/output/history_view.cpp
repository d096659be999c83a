#include "output/history_view.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <tuple>
#include <unordered_map>

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
    // An older database may hold a deep one: text then (kMaxActionDepth).
    json detail = json_nesting_depth(event.detail) <= kMaxActionDepth
                      ? json::parse(event.detail, nullptr, false)
                      : json(json::value_t::discarded);
    out["detail"] = detail.is_discarded() ? json(event.detail) : detail;
  } else {
    out["detail"] = event.detail.empty() ? json() : json(event.detail);
  }
  return out;
}

std::string who(const RecordedProcess& p) {
  return fmt::format("pid {} {}", p.pid, argv_text(p.argv, 60));
}

std::string parent_text(const RecordedProcess& p, const std::string* argv_rendered = nullptr) {
  if (!p.parent_pid) return "";
  // A parent that lived too briefly to be read: its PID is known, its command is not.
  if (p.parent_argv.empty()) return fmt::format("parent {} (its command not seen)", *p.parent_pid);
  return fmt::format("parent {} {}", *p.parent_pid,
                     argv_rendered != nullptr ? *argv_rendered : argv_text(p.parent_argv, 60));
}

// What an action's JSON says, in a line: "root ran gpuclean kill --pid 42 --yes: exit 0".
std::string action_text(const std::string& detail) {
  if (json_nesting_depth(detail) > kMaxActionDepth) return escape_terminal(detail);
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

// What the lines of one timeline share: the clock, and the command lines already rendered (a
// busy node's day is thousands of processes running a handful of commands; escaping each
// command once, not once a line, halved `history --since 24h`: bench/recorder_bench.sh).
struct TimelineCache {  // TimelineWriter::Cache
  static constexpr std::size_t kCommands = 32;
  LocalTimes times;
  std::vector<std::pair<std::vector<std::string>, std::string>> commands;
  std::size_t next = 0;  // the entry replaced next once full
  const std::string& argv_of(const std::vector<std::string>& argv) {
    for (const auto& [known, text] : commands) {
      if (known == argv) return text;
    }
    std::pair<std::vector<std::string>, std::string> entry{argv, argv_text(argv, 60)};
    if (commands.size() < kCommands) {
      commands.push_back(std::move(entry));
      return commands.back().second;
    }
    commands[next] = std::move(entry);
    const std::string& text = commands[next].second;
    next = (next + 1) % kCommands;
    return text;
  }
  std::string who_of(const RecordedProcess& p) {
    std::string text = "pid " + std::to_string(p.pid) + " ";
    text += argv_of(p.argv);
    return text;
  }
};

std::string event_line(const HistoryEvent& e, TimelineCache& cache) {
  std::string what;
  const std::string gpu = e.gpu ? fmt::format("GPU {} ", *e.gpu) : "";
  switch (e.kind) {
    case HistoryEventKind::kAppeared: {
      const RecordedProcess& p = *e.process;
      what = fmt::format("{} ({}, {}", cache.who_of(p), escape_terminal(p.user), e.klass);
      if (!p.owner.empty()) what += ", " + escape_terminal(recorded_owner_text(p.owner));
      if (const std::string parent = parent_text(p, &cache.argv_of(p.parent_argv)); !parent.empty())
        what += "; " + parent;
      what += ")";
      break;
    }
    case HistoryEventKind::kLeft:
      what = e.bytes ? fmt::format("{} left, holding {} at last sight", cache.who_of(*e.process),
                                   format_bytes(*e.bytes))
                     : fmt::format("{} left (its GPU memory was not known: no NVML)",
                                   cache.who_of(*e.process));
      if (!e.detail.empty()) what += " (" + escape_terminal(e.detail) + ")";
      break;
    case HistoryEventKind::kMemoryReturned:
      what = fmt::format("{}{} of pid {} free again, {} s after it left", gpu,
                         format_bytes(e.bytes.value_or(0)), e.process ? e.process->pid : 0,
                         escape_terminal(e.detail));
      break;
    case HistoryEventKind::kClassChanged:
      what = fmt::format("{}: {} -> {}", cache.who_of(*e.process), e.detail, e.klass);
      if (e.klass == "orphan") {
        if (const std::string parent =
                parent_text(*e.process, &cache.argv_of(e.process->parent_argv));
            !parent.empty()) {
          what += " (its " + parent + " is gone)";
        }
      }
      break;
    case HistoryEventKind::kActivityChanged:
      what = fmt::format("{}: now {}", cache.who_of(*e.process), escape_terminal(e.detail));
      break;
    case HistoryEventKind::kMemoryChanged:
      what =
          fmt::format("{}{} now holds {}", gpu, cache.who_of(*e.process), format_bytes(*e.bytes));
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
    case HistoryEventKind::kXid:
      what = gpu + escape_terminal(e.detail);
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
  return fmt::format("{}  {:<21} {}", cache.times.format(e.time), to_string(e.kind), what);
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

struct TimelineWriter::Cache : TimelineCache {};

TimelineWriter::TimelineWriter(std::ostream& out, bool json)
    : out_(out), json_(json), cache_(std::make_unique<Cache>()) {
  if (json_) out_ << "{\"schema\": 1, \"events\": [";
}

TimelineWriter::~TimelineWriter() = default;

void TimelineWriter::write(const HistoryEvent& event) {
  if (json_) {
    // An event per line: an indented document of a day's events was 2.9 million lines and
    // 1.5 s to print (bench/recorder_bench.sh).
    out_ << (written_ == 0 ? "\n" : ",\n")
         << event_json(event).dump(-1, ' ', false, json::error_handler_t::replace);
  } else {
    // Lines gathered and written 64 KiB at a time: an ostream insertion per line was a tenth
    // of printing a day.
    buffer_ += event_line(event, *cache_);
    buffer_ += '\n';
    if (buffer_.size() >= kFlushBytes) {
      out_ << buffer_;
      buffer_.clear();
    }
  }
  ++written_;
}

void TimelineWriter::finish() {
  out_ << buffer_;
  buffer_.clear();
  if (json_) {
    out_ << "\n]}\n";
  } else if (written_ == 0) {
    out_ << "No events in that range.\n";
  }
}

namespace {

// A mark's label for an event worth one on the plot, or empty.
std::string mark_of(const HistoryEvent& e) {
  switch (e.kind) {
    case HistoryEventKind::kAction: {
      if (json_nesting_depth(e.detail) > kMaxActionDepth) return "action";
      const json d = json::parse(e.detail, nullptr, false);
      if (!d.is_object()) return "action";
      std::string label = d.value("command", std::string("action"));
      if (d.contains("exit") && d["exit"].is_number_integer()) {
        label += fmt::format(" (exit {})", d["exit"].get<int>());
      }
      return label;
    }
    case HistoryEventKind::kXid:
      return e.detail.substr(0, e.detail.find(' ', 4));  // "Xid 79"
    case HistoryEventKind::kNvmlFailed:
      return "NVML failed";
    default:
      return "";
  }
}

}  // namespace

RunRecord history_as_record(const std::vector<HistoryHolder>& at_since,
                            const std::vector<HistoryEvent>& events, double since, double until) {
  // What each recorded process holds per GPU, and each GPU's unattributed memory, as of now.
  std::map<std::tuple<std::string, Pid, std::uint64_t>, std::map<unsigned, Bytes>> held;
  std::map<unsigned, Bytes> unattributed;
  std::set<unsigned> gpus;
  for (const HistoryHolder& h : at_since) {
    held[{h.process.boot_id, h.process.pid, h.process.start_ticks}] = h.gpu_memory;
    for (const auto& [gpu, bytes] : h.gpu_memory) gpus.insert(gpu);
  }
  for (const HistoryEvent& e : events) {
    if (e.gpu && e.kind != HistoryEventKind::kXid) gpus.insert(*e.gpu);
  }
  RunRecord record;
  record.started_at = since;
  record.duration = until - since;
  for (unsigned gpu : gpus) {
    RunGpu entry;
    entry.index = gpu;
    record.gpus.push_back(std::move(entry));
  }
  auto sample = [&](double t) {
    RunSample s;
    s.t = t - since;
    for (unsigned gpu : gpus) {
      Bytes sum = unattributed[gpu];
      for (const auto& [key, memory] : held) {
        if (auto it = memory.find(gpu); it != memory.end()) sum += it->second;
      }
      s.used.emplace_back(sum);
    }
    record.samples.push_back(std::move(s));
  };
  sample(since);
  for (const HistoryEvent& e : events) {
    bool changed = false;
    if (e.process) {
      const auto key = std::make_tuple(e.process->boot_id, e.process->pid, e.process->start_ticks);
      if (e.kind == HistoryEventKind::kMemoryChanged && e.gpu && e.bytes) {
        held[key][*e.gpu] = *e.bytes;
        changed = true;
      } else if (e.kind == HistoryEventKind::kLeft) {
        changed = held.erase(key) > 0;
      }
    }
    if (e.kind == HistoryEventKind::kUnattributedAppeared && e.gpu) {
      unattributed[*e.gpu] = e.bytes.value_or(0);
      changed = true;
    } else if (e.kind == HistoryEventKind::kUnattributedCleared && e.gpu) {
      unattributed[*e.gpu] = 0;
      changed = true;
    }
    if (changed) sample(e.time);
    if (const std::string label = mark_of(e); !label.empty()) {
      RunEvent mark;
      mark.t = e.time - since;
      mark.kind = RunEventKind::kNote;
      mark.detail = label;
      record.events.push_back(std::move(mark));
    }
  }
  sample(until);
  return record;
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
