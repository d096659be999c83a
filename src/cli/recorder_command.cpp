#include "cli/recorder_command.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <memory>
#include <variant>

#include "cli/leftover_report.h"
#include "core/diagnostics.h"
#include "core/duration.h"
#include "core/units.h"
#include "core/wall_time.h"
#include "history/event_store.h"
#include "output/escape.h"
#include "output/history_view.h"
#include "output/json.h"
#include "output/leftover_cost_view.h"
#include "output/text_width.h"
#include "procfs/host_facts.h"
#include "recorder/action_socket.h"
#include "recorder/journal.h"
#include "recorder/recorder.h"

namespace gpuclean::cli {
namespace {

// The settings from the options, or the usage error to print.
Result<recorder::RecorderSettings> settings_of(const RecorderOptions& options) {
  recorder::RecorderSettings settings;
  if (!options.db.empty()) settings.db_path = options.db;
  auto interval = parse_duration(options.interval);
  if (!interval.ok() || interval->count() < 100) {
    return Error{0, "--interval " + (interval.ok() ? std::string("must be at least 100ms")
                                                   : interval.error().message())};
  }
  settings.interval = *interval;
  auto retention = parse_duration(options.retention);
  if (!retention.ok() || retention->count() < 60'000) {
    return Error{0, "--retention " + (retention.ok() ? std::string("must be at least 1m")
                                                     : retention.error().message())};
  }
  settings.retention = *retention;
  auto size = parse_size(options.max_size);
  if (!size.ok() || *size < (Bytes{1} << 20)) {
    return Error{0, "--max-size " + (size.ok() ? std::string("must be at least 1MiB")
                                               : size.error().message())};
  }
  settings.max_bytes = *size;
  settings.socket_path = options.socket.empty() ? recorder::kDefaultActionSocket : options.socket;
  if (options.socket == "off") settings.socket_path.clear();
  settings.journal_socket = options.journal.empty() ? recorder::kJournalSocket : options.journal;
  if (options.journal == "off") settings.journal_socket.clear();
  settings.textfile = options.textfile;
  settings.proc_events = !options.no_proc_events;
  settings.proc_root = options.common.proc_root;
  settings.kernel_log = options.roots.kmsg;
  return settings;
}

// A moment from --since/--until/--at, or the usage error.
Result<std::optional<double>> moment(const std::string& flag, const std::string& text, double now) {
  if (text.empty()) return std::optional<double>();
  auto parsed = parse_time_point(text, now);
  if (!parsed.ok()) return Error{0, flag + " " + parsed.error().message()};
  return std::optional<double>(*parsed);
}

// --kind's names as kinds; the error names the ones there are.
Result<std::vector<HistoryEventKind>> kinds_of(const std::vector<std::string>& names) {
  std::vector<HistoryEventKind> kinds;
  for (const std::string& name : names) {
    const auto kind = history_event_kind_from_string(name);
    if (!kind) {
      std::string known;
      for (const std::string& each : history_event_kind_names()) {
        known += (known.empty() ? "" : ", ") + each;
      }
      return Error{
          0, "--kind '" + output::escape_terminal(name) + "' is no event kind (" + known + ")"};
    }
    kinds.push_back(*kind);
  }
  return kinds;
}

Result<history::EventQuery> query_of(const HistoryOptions& options, double now) {
  history::EventQuery query;
  auto kinds = kinds_of(options.kinds);
  if (!kinds.ok()) return kinds.error();
  query.kinds = std::move(*kinds);
  if (options.follow && (!options.until.empty() || !options.at.empty())) {
    return Error{0, "--follow reads on from now: not with --until or --at"};
  }
  const std::string since_text =
      !options.since.empty() ? options.since : (options.follow ? "10m" : "24h");
  auto since = moment("--since", since_text, now);
  if (!since.ok()) return since.error();
  auto until = moment("--until", options.until, now);
  if (!until.ok()) return until.error();
  query.since = *since;
  query.until = *until;
  query.limit = options.limit;
  if (!options.gpu.empty()) {
    auto gpus = parse_gpu_list(options.gpu);
    if (!gpus.ok() || !*gpus || (*gpus)->size() != 1) {
      return Error{0, "--gpu takes one GPU index (e.g. --gpu 3)"};
    }
    query.gpu = *(*gpus)->begin();
  }
  if (!options.pid.empty()) {
    char* end = nullptr;
    const long pid = std::strtol(options.pid.c_str(), &end, 10);
    if (end == options.pid.c_str() || *end != '\0' || pid <= 0 || pid > 4194304) {
      return Error{0, "--pid '" + options.pid + "' is not a PID"};
    }
    query.pid = static_cast<Pid>(pid);
  }
  if (!options.job.empty()) query.owner = "slurm-job:" + options.job;
  return query;
}

// history --follow: the events from `query`, then every second those stored since, until
// SIGINT, SIGTERM or SIGHUP (row ids grow as events are stored: each read asks for those
// after the highest read so far). The recorder writes in WAL mode: each read sees what it has
// committed, and never blocks it.
Status follow_events(const history::EventStore& store, history::EventQuery query,
                     output::TimelineWriter& timeline) {
  const StopSignals stop;
  if (!stop.fd().valid()) return errno_error("signalfd");
  constexpr int kReadEveryMs = 1000;
  for (;;) {
    Status read = store.each_event(query, [&](const HistoryEvent& event) {
      timeline.write(event);
      query.after_id = std::max(query.after_id.value_or(0), event.id);
    });
    if (!read.ok()) return read;
    timeline.flush();
    pollfd wait{stop.fd().get(), POLLIN, 0};
    const int ready = ::poll(&wait, 1, kReadEveryMs);
    if (ready > 0 || (ready < 0 && errno != EINTR)) return Ok{};
  }
}

std::string db_path_of(const std::string& given) {
  return given.empty() ? recorder::kDefaultDatabase : given;
}

// The database at `db` (empty: the default) for reading, or nullopt once the reason is said.
std::optional<history::EventStore> open_history(const std::string& db, const Io& io) {
  auto store = history::EventStore::open(db_path_of(db), true);
  if (store.ok()) return std::move(*store);
  say(io.err, "history") << store.error().message();
  if (store.error().errnum == ENOENT) {
    io.err << " (no history there: is gpuclean recorder running? systemctl enable --now "
              "gpuclean-recorder.service)";
  } else if (store.error().errnum == EACCES) {
    io.err << " (the history is root's: run as root)";
  }
  io.err << '\n';
  return std::nullopt;
}

// history --report: what leftovers cost from --since (default 7d, the recorder's retention)
// to --until.
int run_history_report(const HistoryOptions& options, const Io& io) {
  const double now = unix_now();
  auto since = moment("--since", options.since.empty() ? "7d" : options.since, now);
  auto until = moment("--until", options.until, now);
  if (!since.ok() || !until.ok() || until->value_or(now) <= **since) {
    say(io.err, "history") << (!since.ok()   ? since.error().message()
                               : !until.ok() ? until.error().message()
                                             : std::string("--until must be after --since"))
                           << '\n';
    return kExitUsage;
  }
  auto store = open_history(options.db, io);
  if (!store) return kExitRuntime;
  auto report =
      read_leftover_cost(*store, **since, until->value_or(now),
                         cost_grouping_from_string(options.by).value_or(CostGrouping::kUser));
  if (!report.ok()) {
    say(io.err, "history") << report.error().message() << '\n';
    return kExitRuntime;
  }
  if (options.common.json) {
    output::write_json(io.out, output::leftover_cost_json(*report));
  } else {
    output::render_leftover_cost_text(io.out, *report);
  }
  return kExitClean;
}

}  // namespace

int run_recorder_command(const RecorderOptions& options, const Io& io) {
  auto settings = settings_of(options);
  if (!settings.ok()) {
    say(io.err, "recorder") << settings.error().message() << '\n';
    return kExitUsage;
  }
  auto full_scan = parse_duration(options.full_scan);
  if (!full_scan.ok()) {
    say(io.err, "recorder") << "--full-scan " << full_scan.error().message() << '\n';
    return kExitUsage;
  }
  std::unique_ptr<collect::Gatherer> gatherer;
  if (auto failed = open_gatherer(options.common, io, gatherer)) return *failed;
  gatherer->scan_in_turns(*full_scan);
  gatherer->start_nvml_helper();  // before any thread: it forks
  return recorder::run_recorder(*settings, *gatherer, io.err);
}

std::map<Pid, RecordedParent> recorded_parents_of(const std::string& db,
                                                  const std::vector<const ProcessInfo*>& processes,
                                                  const std::string& proc_root) {
  std::map<Pid, RecordedParent> parents;
  const std::string path = db_path_of(db);
  if (processes.empty() || ::access(path.c_str(), R_OK) != 0) return parents;  // none, or not root
  const std::optional<std::string> boot_id = procfs::read_boot_id(proc_root);
  auto store = history::EventStore::open(path, true);
  if (!boot_id || !store.ok()) return parents;
  for (const ProcessInfo* process : processes) {
    auto parent = store->recorded_parent(*boot_id, process->pid, process->start_ticks);
    if (parent.ok() && *parent) parents.emplace(process->pid, std::move(**parent));
  }
  return parents;
}

bool history_readable(const std::string& db) {
  return ::access(db_path_of(db).c_str(), R_OK) == 0;
}

std::map<std::pair<Pid, std::uint64_t>, double> recorded_idle_since(
    const std::string& db, const std::vector<const ProcessInfo*>& processes,
    const std::string& proc_root) {
  std::map<std::pair<Pid, std::uint64_t>, double> since;
  if (processes.empty() || !history_readable(db)) return since;
  const std::optional<std::string> boot_id = procfs::read_boot_id(proc_root);
  auto store = history::EventStore::open(db_path_of(db), true);
  if (!boot_id || !store.ok()) return since;
  for (const ProcessInfo* process : processes) {
    const auto idle = store->idle_since(*boot_id, process->pid, process->start_ticks);
    if (idle.ok() && *idle) since[{process->pid, process->start_ticks}] = **idle;
  }
  return since;
}

std::optional<RecordedParent> recorded_parent_of(const std::string& db, const ProcessInfo& process,
                                                 const std::string& proc_root) {
  auto parents = recorded_parents_of(db, {&process}, proc_root);
  if (parents.empty()) return std::nullopt;
  return std::move(parents.begin()->second);
}

int run_history(const HistoryOptions& options, const Io& io) {
  if (options.report) return run_history_report(options, io);
  const double now = unix_now();
  auto at = moment("--at", options.at, now);
  auto query = query_of(options, now);
  if (!at.ok() || !query.ok()) {
    say(io.err, "history") << (at.ok() ? query.error() : at.error()).message() << '\n';
    return kExitUsage;
  }
  auto store = open_history(options.db, io);
  if (!store) return kExitRuntime;
  if (*at) {
    auto held = store->held_at(**at);
    if (!held.ok()) {
      say(io.err, "history") << held.error().message() << '\n';
      return kExitRuntime;
    }
    std::vector<output::HistoryHolder> holders;
    for (history::HeldAt& h : *held) {
      holders.push_back({std::move(h.process), std::move(h.klass), std::move(h.gpu_memory)});
    }
    if (options.common.json) {
      output::render_held_at_json(io.out, **at, holders);
    } else {
      output::render_held_at_text(io.out, **at, holders);
    }
    return kExitClean;
  }
  output::TimelineOptions timeline_options;
  timeline_options.format = !options.common.json ? output::TimelineFormat::kText
                            : options.follow     ? output::TimelineFormat::kJsonLines
                                                 : output::TimelineFormat::kJson;
  timeline_options.every_memory_change = options.all;
  timeline_options.width =
      static_cast<std::size_t>(terminal_columns(STDOUT_FILENO, output::kNoWidthLimit));
  output::TimelineWriter timeline(io.out, timeline_options);
  Status read = options.follow ? follow_events(*store, *query, timeline)
                               : store->each_event(*query, [&timeline](const HistoryEvent& event) {
                                   timeline.write(event);
                                 });
  timeline.finish();
  if (!read.ok()) {
    say(io.err, "history") << read.error().message() << '\n';
    return kExitRuntime;
  }
  return kExitClean;
}

}  // namespace gpuclean::cli
