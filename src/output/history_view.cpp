#include "output/history_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/escape.h"
#include "core/units.h"
#include "core/wall_time.h"
#include "output/json.h"
#include "output/text_width.h"

namespace gpuclean::output {
namespace {

using nlohmann::json;

json argv_json(const std::vector<std::string>& argv) {
  json list = json::array();
  for (const std::string& arg : argv) list.push_back(arg);
  return list;
}

}  // namespace

json recorded_process_json(const RecordedProcess& p) {
  json out = {{"pid", p.pid},   {"start_ticks", p.start_ticks}, {"boot_id", p.boot_id},
              {"user", p.user}, {"argv", argv_json(p.argv)},    {"owner", nullptr}};
  if (!p.owner.empty()) out["owner"] = p.owner;
  out["parent"] = nullptr;
  if (p.parent_pid) {
    out["parent"] = {{"pid", *p.parent_pid},
                     {"start_ticks", or_null(p.parent_start_ticks)},
                     {"argv", argv_json(p.parent_argv)}};
  }
  return out;
}

namespace {

json event_json(const HistoryEvent& event) {
  json out = {{"time", event.time}, {"kind", to_string(event.kind)}};
  out["process"] = event.process ? recorded_process_json(*event.process) : json();
  out["gpu"] = or_null(event.gpu);
  out["bytes"] = or_null(event.bytes);
  out["class"] = text_or_null(event.klass);
  if (event.kind == HistoryEventKind::kAction) {
    // An older database may hold a deep one: text then (kMaxActionDepth).
    json detail = json_nesting_depth(event.detail) <= kMaxActionDepth
                      ? json::parse(event.detail, nullptr, false)
                      : json(json::value_t::discarded);
    out["detail"] = detail.is_discarded() ? json(event.detail) : detail;
  } else {
    out["detail"] = text_or_null(event.detail);
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

// A string member of an action, or `fallback`. An action's fields but uid and user are the
// sender's text: {"command": 5} made json::value throw and `history` abort (issue 49's review).
std::string text_field(const json& d, const char* key, const char* fallback) {
  const auto it = d.find(key);
  return it != d.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
}

// What an action's JSON says, in a line: "root ran gpuclean kill --pid 42 --yes: exit 0".
std::string action_text(const std::string& detail) {
  if (json_nesting_depth(detail) > kMaxActionDepth) return escape_terminal(detail);
  const json d = json::parse(detail, nullptr, false);
  if (!d.is_object()) return escape_terminal(detail);
  std::string text = escape_terminal(text_field(d, "user", "?"));
  std::vector<std::string> args;
  if (d.contains("args") && d["args"].is_array()) {
    for (const json& arg : d["args"]) {
      if (arg.is_string()) args.push_back(arg.get<std::string>());
    }
  }
  text += " ran gpuclean " + escape_terminal(text_field(d, "command", "?"));
  if (!args.empty()) text += " " + argv_text(args, 80);
  if (d.contains("exit") && d["exit"].is_number_integer()) {
    text += fmt::format(": exit {}", d["exit"].get<int>());
  }
  if (d.contains("summary") && d["summary"].is_string()) {
    text += " (" + escape_terminal(d["summary"].get<std::string>()) + ")";
  }
  return text;
}

}  // namespace

// The timeline's shared state. Named, not anonymous: TimelineWriter::Cache derives from it, and
// a base from an anonymous namespace warns in a unity build (-Wsubobject-linkage), as
// gpuclean.sh's is.
namespace timeline_text {

// A holder's memory changes on one GPU after its first, folded into one line: how many, the
// peak and the last figure.
struct MemoryFold {
  RecordedProcess process;
  std::size_t more = 0;  // changes after the first, each folded
  Bytes peak = 0;
  double peak_time = 0;
  Bytes last = 0;
  double last_time = 0;
};

// (boot ID, PID, start ticks): a process across the timeline.
using ProcessKey = std::tuple<std::string, Pid, std::uint64_t>;

ProcessKey key_of(const RecordedProcess& p) {
  return {p.boot_id, p.pid, p.start_ticks};
}

// What the lines of one timeline share: the clock, the command lines already rendered (a
// busy node's day is thousands of processes running a handful of commands; escaping each
// command once, not once a line, halved `history --since 24h`: bench/recorder_bench.sh), the
// parents already named, and the memory changes being folded.
struct TimelineCache {  // TimelineWriter::Cache
  static constexpr std::size_t kCommands = 32;
  LocalTimes times;
  std::vector<std::pair<std::vector<std::string>, std::string>> commands;
  std::size_t next = 0;  // the entry replaced next once full
  std::set<ProcessKey> parents_named;
  std::map<std::pair<ProcessKey, unsigned>, MemoryFold> folds;

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
  // "parent 42 python serve.py" the first time; "parent 42" after (a server's two hundred
  // workers repeated its command line two hundred times).
  std::string parent_of(const RecordedProcess& p) {
    if (!p.parent_pid) return "";
    const ProcessKey parent{p.boot_id, *p.parent_pid, p.parent_start_ticks.value_or(0)};
    if (!p.parent_argv.empty() && !parents_named.insert(parent).second) {
      return fmt::format("parent {}", *p.parent_pid);
    }
    if (parents_named.size() > 4096) parents_named.clear();  // bounded; a name said again
    return parent_text(p, &argv_of(p.parent_argv));
  }
};

}  // namespace timeline_text

namespace {

using timeline_text::key_of;
using timeline_text::MemoryFold;
using timeline_text::TimelineCache;

std::string holder_line(const HistoryEvent& e, TimelineCache& cache) {
  const RecordedProcess& p = *e.process;
  switch (e.kind) {
    case HistoryEventKind::kAppeared: {
      std::string what =
          fmt::format("{} ({}, {}", cache.who_of(p), escape_terminal(p.user), e.klass);
      if (!p.owner.empty()) what += ", " + escape_terminal(recorded_owner_text(p.owner));
      if (const std::string parent = cache.parent_of(p); !parent.empty()) what += "; " + parent;
      return what + ")";
    }
    case HistoryEventKind::kLeft: {
      std::string what =
          e.bytes ? fmt::format("{} left, holding {} at last sight", cache.who_of(p),
                                format_bytes(*e.bytes))
                  : fmt::format("{} left (its GPU memory was not known: no NVML)", cache.who_of(p));
      if (!e.detail.empty()) what += " (" + escape_terminal(e.detail) + ")";
      return what;
    }
    case HistoryEventKind::kClassChanged: {
      std::string what = fmt::format("{}: {} -> {}", cache.who_of(p), e.detail, e.klass);
      if (e.klass == "orphan") {
        if (const std::string parent = cache.parent_of(p); !parent.empty()) {
          what += " (its " + parent + " is gone)";
        }
      }
      return what;
    }
    case HistoryEventKind::kActivityChanged:
      return fmt::format("{}: now {}", cache.who_of(p), escape_terminal(e.detail));
    default:  // kMemoryChanged
      return fmt::format("{}{} now holds {}", e.gpu ? fmt::format("GPU {} ", *e.gpu) : "",
                         cache.who_of(p), format_bytes(e.bytes.value_or(0)));
  }
}

std::string event_line(const HistoryEvent& e, TimelineCache& cache) {
  std::string what;
  const std::string gpu = e.gpu ? fmt::format("GPU {} ", *e.gpu) : "";
  switch (e.kind) {
    case HistoryEventKind::kAppeared:
    case HistoryEventKind::kLeft:
    case HistoryEventKind::kClassChanged:
    case HistoryEventKind::kActivityChanged:
    case HistoryEventKind::kMemoryChanged:
      what = e.process ? holder_line(e, cache) : "?";
      break;
    case HistoryEventKind::kMemoryReturned:
      what = fmt::format("{}{} of pid {} free again, {} s after it left", gpu,
                         format_bytes(e.bytes.value_or(0)), e.process ? e.process->pid : 0,
                         escape_terminal(e.detail));
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
    case HistoryEventKind::kHoldersSkipped:
      what = escape_terminal(e.detail);
      break;
  }
  return fmt::format("{}  {:<21} {}", cache.times.format(e.time), to_string(e.kind), what);
}

// The line a fold ends in, stamped with its last change.
std::string fold_line(unsigned gpu, const MemoryFold& fold, TimelineCache& cache) {
  return fmt::format("{}  {:<21} GPU {} {}: {} more change{}, peak {} at {}, last {}",
                     cache.times.format(fold.last_time), "memory_changed", gpu,
                     cache.who_of(fold.process), fold.more, fold.more == 1 ? "" : "s",
                     format_bytes(fold.peak), format_local_clock(fold.peak_time),
                     format_bytes(fold.last));
}

}  // namespace

std::string argv_text(const std::vector<std::string>& argv, std::size_t max_chars) {
  if (argv.empty()) return "?";  // a process recorded without one
  return display_argv(argv, max_chars);
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

struct TimelineWriter::Cache : timeline_text::TimelineCache {};

TimelineWriter::TimelineWriter(std::ostream& out, TimelineOptions options)
    : out_(out), options_(options), cache_(std::make_unique<Cache>()) {
  if (options_.format == TimelineFormat::kJson) out_ << "{\"schema\": 1, \"events\": [";
}

TimelineWriter::~TimelineWriter() = default;

void TimelineWriter::put_line(const std::string& line) {
  buffer_ += options_.width < line.size() ? cut_to_columns(line, options_.width) : line;
  buffer_ += '\n';
  // Lines gathered and written 64 KiB at a time: an ostream insertion per line was a tenth of
  // printing a day.
  if (buffer_.size() >= kFlushBytes) {
    out_ << buffer_;
    buffer_.clear();
  }
}

void TimelineWriter::write(const HistoryEvent& event) {
  ++written_;
  if (options_.format != TimelineFormat::kText) {
    // An event per line: an indented document of a day's events was 2.9 million lines and
    // 1.5 s to print (bench/recorder_bench.sh).
    if (options_.format == TimelineFormat::kJson) buffer_ += written_ == 1 ? "\n" : ",\n";
    buffer_ += event_json(event).dump(-1, ' ', false, json::error_handler_t::replace);
    if (options_.format == TimelineFormat::kJsonLines) buffer_ += '\n';
    if (buffer_.size() >= kFlushBytes) flush();
    return;
  }
  auto& folds = cache_->folds;
  if (event.process && event.kind == HistoryEventKind::kMemoryChanged && event.gpu && event.bytes &&
      !options_.every_memory_change) {
    const auto [it, first] = folds.try_emplace({key_of(*event.process), *event.gpu});
    MemoryFold& fold = it->second;
    if (first) {
      fold = {*event.process, 0, *event.bytes, event.time, *event.bytes, event.time};
      put_line(event_line(event, *cache_));
      return;
    }
    ++fold.more;
    if (*event.bytes > fold.peak) {
      fold.peak = *event.bytes;
      fold.peak_time = event.time;
    }
    fold.last = *event.bytes;
    fold.last_time = event.time;
    return;
  }
  if (event.process && event.kind == HistoryEventKind::kLeft) {
    // Its folds end before the line that says it left.
    const timeline_text::ProcessKey key = key_of(*event.process);
    auto it = folds.lower_bound({key, 0});
    while (it != folds.end() && it->first.first == key) {
      if (it->second.more > 0) put_line(fold_line(it->first.second, it->second, *cache_));
      it = folds.erase(it);
    }
  }
  put_line(event_line(event, *cache_));
}

void TimelineWriter::flush() {
  out_ << buffer_;
  buffer_.clear();
  out_.flush();
}

void TimelineWriter::finish() {
  // The folds of holders still there at the end, in the order of their last change.
  std::vector<std::pair<unsigned, const MemoryFold*>> open;
  for (const auto& [key, fold] : cache_->folds) {
    if (fold.more > 0) open.emplace_back(key.second, &fold);
  }
  std::sort(open.begin(), open.end(),
            [](const auto& a, const auto& b) { return a.second->last_time < b.second->last_time; });
  for (const auto& [gpu, fold] : open) put_line(fold_line(gpu, *fold, *cache_));
  cache_->folds.clear();
  if (options_.format == TimelineFormat::kJson) {
    buffer_ += "\n]}\n";
  } else if (options_.format == TimelineFormat::kText && written_ == 0) {
    buffer_ += "No events in that range.\n";
  }
  flush();
}

namespace {

// A mark's label for an event worth one on the plot, or empty.
std::string mark_of(const HistoryEvent& e) {
  switch (e.kind) {
    case HistoryEventKind::kAction: {
      if (json_nesting_depth(e.detail) > kMaxActionDepth) return "action";
      const json d = json::parse(e.detail, nullptr, false);
      if (!d.is_object()) return "action";
      // Any local user can send an action: a "command" that is no string (json::value would
      // throw) labels it "action".
      const auto command = d.find("command");
      std::string label = command != d.end() && command->is_string() ? command->get<std::string>()
                                                                     : std::string("action");
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
    doc["holders"].push_back({{"process", recorded_process_json(h.process)},
                              {"class", h.klass},
                              {"gpu_memory", gpu_memory_json(h.gpu_memory)}});
  }
  out << doc.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace gpuclean::output
