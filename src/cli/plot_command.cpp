#include "cli/plot_command.h"

#include <ostream>

#include "cli/leftover_report.h"
#include "core/atomic_file.h"
#include "core/diagnostics.h"
#include "core/duration.h"
#include "core/input_file.h"
#include "core/wall_time.h"
#include "history/event_store.h"
#include "input/run_record_reader.h"
#include "output/escape.h"
#include "output/history_plot.h"
#include "output/history_view.h"
#include "output/leftover_cost_plot.h"
#include "output/run_plot.h"
#include "output/run_record.h"
#include "recorder/recorder.h"

namespace gpuclean::cli {
namespace {

// A record samples once per --sample-interval: a week at 1 s is ~60 MiB of JSON.
constexpr std::size_t kMaxRecordBytes = std::size_t{256} << 20;

int write_svg(const PlotOptions& o, const std::string& svg, const Io& io) {
  if (o.output_path.empty()) {
    io.out << svg;
    return kExitClean;
  }
  // Atomically, through the one writer of every output file (core/atomic_file.h): a link
  // planted at the name is replaced, never followed.
  if (Status written = write_file_atomically(o.output_path, svg); !written.ok()) {
    say(io.err, "plot") << "cannot write " << output::escape_terminal(o.output_path) << " ("
                        << output::escape_terminal(written.error().message()) << ")\n";
    return kExitRuntime;
  }
  return kExitClean;
}

// What the plot needs to draw its gaps: when recording began (the earliest event: events come
// in time order), and whether the recorder was down at `since` (its last start or stop before
// then was a stop; one of each per recorder run, so there are few).
struct Coverage {
  std::optional<double> began;
  bool stopped_at_since = false;
};

Result<Coverage> recording_coverage(const history::EventStore& store, double since) {
  auto first = store.events({.limit = 1});
  auto runs = store.events(
      {.until = since,
       .kinds = {HistoryEventKind::kRecorderStarted, HistoryEventKind::kRecorderStopped}});
  if (!first.ok()) return first.error();
  if (!runs.ok()) return runs.error();
  Coverage coverage;
  if (!first->empty()) coverage.began = first->front().time;
  coverage.stopped_at_since =
      !runs->empty() && runs->back().kind == HistoryEventKind::kRecorderStopped;
  return coverage;
}

// --since and --until as moments (since before until), or the usage error said.
std::optional<std::pair<double, double>> plot_window(const PlotOptions& o, const Io& io) {
  const double now = unix_now();
  auto since = parse_time_point(o.since.empty() ? (o.report ? "7d" : "2h") : o.since, now);
  auto until = o.until.empty() ? Result<double>(now) : parse_time_point(o.until, now);
  if (!since.ok() || !until.ok() || *until <= *since) {
    say(io.err, "plot") << (!since.ok()   ? "--since " + since.error().message()
                            : !until.ok() ? "--until " + until.error().message()
                                          : std::string("--until must be after --since"))
                        << '\n';
    return std::nullopt;
  }
  return std::make_pair(*since, *until);
}

std::optional<history::EventStore> plot_store(const PlotOptions& o, const Io& io) {
  auto store = history::EventStore::open(o.db.empty() ? recorder::kDefaultDatabase : o.db, true);
  if (store.ok()) return std::move(*store);
  say(io.err, "plot") << output::escape_terminal(store.error().message()) << '\n';
  return std::nullopt;
}

// plot --report: what leftovers cost from --since to --until.
int plot_report(const PlotOptions& o, const Io& io) {
  const auto window = plot_window(o, io);
  if (!window) return kExitUsage;
  auto store = plot_store(o, io);
  if (!store) return kExitRuntime;
  const auto [since, until] = *window;
  auto report = read_leftover_cost(*store, since, until,
                                   cost_grouping_from_string(o.by).value_or(CostGrouping::kUser));
  if (!report.ok()) {
    say(io.err, "plot") << report.error().message() << '\n';
    return kExitRuntime;
  }
  return write_svg(
      o,
      output::render_leftover_cost_svg(
          *report, "gpuclean history --report: " + host_name(),
          format_local_time(since) + " to " + format_local_time(until) + ", by " + o.by),
      io);
}

// plot --history: the recorder's timeline from --since to --until.
int plot_history(const PlotOptions& o, const Io& io) {
  const auto window = plot_window(o, io);
  if (!window) return kExitUsage;
  auto store = plot_store(o, io);
  if (!store) return kExitRuntime;
  const auto [since, until] = *window;
  auto held = store->held_at(since);
  auto events = store->events({.since = since, .until = until});
  if (!held.ok() || !events.ok()) {
    say(io.err, "plot") << (held.ok() ? events.error() : held.error()).message() << '\n';
    return kExitRuntime;
  }
  auto coverage = recording_coverage(*store, since);
  if (!coverage.ok()) {
    say(io.err, "plot") << coverage.error().message() << '\n';
    return kExitRuntime;
  }
  output::HistoryPlotInput input;
  for (history::HeldAt& h : *held) {
    input.at_since.push_back({std::move(h.process), std::move(h.klass), std::move(h.gpu_memory)});
  }
  input.events = std::move(*events);
  input.since = since;
  input.until = until;
  input.recording_began = coverage->began;
  input.stopped_at_since = coverage->stopped_at_since;
  input.title = "gpuclean history: " + host_name();
  input.subtitle = format_local_time(since) + " to " + format_local_time(until) + ", " +
                   std::to_string(input.events.size()) + " events";
  return write_svg(o, output::render_history_svg(input), io);
}

}  // namespace

int run_plot(const PlotOptions& o, const Io& io, bool stdout_is_terminal) {
  if (o.output_path.empty() && stdout_is_terminal) {
    say(io.err, "plot") << "not writing SVG onto a terminal; give -o FILE.svg or redirect "
                           "stdout (gpuclean plot RECORD > FILE.svg)\n";
    return kExitUsage;
  }
  if ((o.history || o.report) != o.record_path.empty()) {
    say(io.err, "plot") << "give a RECORD (gpuclean run --record), --history or --report, one "
                           "of them\n";
    return kExitUsage;
  }
  if (o.history) return plot_history(o, io);
  if (o.report) return plot_report(o, io);
  const std::string shown = output::escape_terminal(o.record_path);
  auto text = read_input_file(o.record_path, kMaxRecordBytes);  // a regular file; never blocks
  if (!text.ok()) {
    say(io.err, "plot") << output::escape_terminal(text.error().message()) << '\n';
    return kExitUsage;
  }
  auto record = input::parse_run_record(*text);
  if (!record.ok()) {
    say(io.err, "plot") << shown << ": " << record.error().context << '\n';
    return kExitUsage;
  }
  return write_svg(o, output::render_run_svg(*record), io);
}

}  // namespace gpuclean::cli
