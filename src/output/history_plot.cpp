#include "output/history_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "core/escape.h"
#include "core/run_record.h"
#include "core/units.h"
#include "output/svg_text.h"

namespace gpuclean::output {
// The picture's own names (kWidth, Mark, …) in a namespace of their own: run_plot.cpp has the
// same ones, and a unity build (gpuclean.sh's: one batch per library) puts both files in one
// translation unit, where anonymous namespaces merge.
namespace history_svg {
namespace {

// Across: the lane labels' column (the GPU legend above it), the plot, then room for a bar's
// peak figure where the bar reaches the window's end.
constexpr double kWidth = 1200;
constexpr double kLeft = 280;
constexpr double kRight = 140;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
// Down: the title and subtitle, the marks' label rows, the memory panel, its time axis, the
// lanes, the legend.
constexpr double kHeaderHeight = 50;
constexpr double kMarkRowHeight = 14;
constexpr std::size_t kMaxMarkRows = 6;
constexpr double kMemoryHeight = 190;
constexpr double kLaneHeight = 20;
constexpr double kBarHeight = 14;
constexpr std::size_t kMaxLanes = 20;
// An SVG has no font metrics: text widths are estimates. 11 px monospace is 0.6 em a character
// (DejaVu Sans Mono, Liberation Mono); 11 px sans-serif: svg_text.h's kSansCharWidth.
constexpr double kMonoCharWidth = 6.7;
// A white outline under a text's letters: readable over hatching and lines.
constexpr const char* kHalo = R"(stroke="white" stroke-width="3" paint-order="stroke")";

// The classes of a dead job's remains (core/model.h HolderClass): its owner is gone, and what
// it holds is nobody's work. `foreign` counts too: its PID's owner died and the PID moved on.
bool is_leftover(const std::string& klass) {
  return klass == "orphan" || klass == "heir" || klass == "zombie-leader" || klass == "foreign";
}

struct Span {
  double from = 0;
  double to = 0;
};

// Seconds to x across the plot.
struct Frame {
  double since = 0;
  double until = 1;
  [[nodiscard]] double x_of(double t) const {
    return kLeft + kPlotWidth * std::clamp((t - since) / (until - since), 0.0, 1.0);
  }
};

// Where the picture's parts are, top to bottom (the marks' label rows above memory_top).
struct Layout {
  double memory_top = 0;
  double memory_bottom = 0;
  double lanes_top = 0;
  double lanes_bottom = 0;
  double bottom = 0;  // below the lanes and their notes: where the legend goes
};

// --- Coverage: when the recorder was not recording -----------------------------------------

struct Coverage {
  std::vector<Span> gaps;        // nothing recorded: no line drawn, a band instead
  std::vector<double> restarts;  // a start with no stop before it: the recorder was killed
};

std::vector<Span> clipped_and_merged(std::vector<Span> spans, double since, double until) {
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.from < b.from; });
  std::vector<Span> out;
  for (Span span : spans) {
    span.from = std::max(span.from, since);
    span.to = std::min(span.to, until);
    if (span.to <= span.from) continue;
    if (!out.empty() && span.from <= out.back().to) {
      out.back().to = std::max(out.back().to, span.to);
    } else {
      out.push_back(span);
    }
  }
  return out;
}

Coverage coverage_of(const HistoryPlotInput& in) {
  Coverage c;
  const double began = in.recording_began.value_or(in.until);
  c.gaps.push_back({in.since, began});
  std::optional<double> stopped;
  if (in.stopped_at_since) stopped = in.since;
  for (const HistoryEvent& e : in.events) {
    if (e.kind == HistoryEventKind::kRecorderStopped) {
      if (!stopped) stopped = e.time;
    } else if (e.kind == HistoryEventKind::kRecorderStarted) {
      if (stopped) {
        c.gaps.push_back({*stopped, e.time});
        stopped.reset();
      } else if (e.time > began) {  // the start at `began` is where recording began
        c.restarts.push_back(e.time);
      }
    }
  }
  if (stopped) c.gaps.push_back({*stopped, in.until});
  c.gaps = clipped_and_merged(std::move(c.gaps), in.since, in.until);
  return c;
}

std::vector<Span> recorded_spans(const std::vector<Span>& gaps, double since, double until) {
  std::vector<Span> out;
  double from = since;
  for (const Span& gap : gaps) {
    if (gap.from > from) out.push_back({from, gap.from});
    from = std::max(from, gap.to);
  }
  if (until > from) out.push_back({from, until});
  return out;
}

// --- Memory per GPU --------------------------------------------------------------------------

struct GpuSeries {
  unsigned index = 0;
  std::vector<std::vector<std::pair<double, double>>> runs;  // (time, bytes), one per span
  double peak = 0;
};

// GPU `g`'s level within `span`, as steps (a level holds until the next change): the level
// at its start, each change, the level at its end.
std::vector<std::pair<double, double>> steps_within(const RunRecord& record, std::size_t g,
                                                    double since, const Span& span) {
  std::vector<std::pair<double, double>> points;
  std::optional<double> level;
  for (const RunSample& sample : record.samples) {
    if (g >= sample.used.size() || !sample.used[g]) continue;
    const double t = since + sample.t;
    if (t >= span.to) break;
    const auto bytes = static_cast<double>(*sample.used[g]);
    if (t > span.from) {
      if (level && points.empty()) points.emplace_back(span.from, *level);
      if (level) points.emplace_back(t, *level);
      points.emplace_back(t, bytes);
    }
    level = bytes;
  }
  if (level) {
    if (points.empty()) points.emplace_back(span.from, *level);
    points.emplace_back(span.to, *level);
  }
  return points;
}

std::vector<GpuSeries> memory_series(const RunRecord& record, double since,
                                     const std::vector<Span>& recorded) {
  std::vector<GpuSeries> all;
  for (std::size_t g = 0; g < record.gpus.size(); ++g) {
    GpuSeries series;
    series.index = record.gpus[g].index;
    for (const Span& span : recorded) {
      series.runs.push_back(steps_within(record, g, since, span));
      for (const auto& point : series.runs.back())
        series.peak = std::max(series.peak, point.second);
    }
    all.push_back(std::move(series));
  }
  return all;
}

// --- Lanes: a holder each --------------------------------------------------------------------

struct Segment {
  double from = 0;
  double to = 0;
  std::string klass;
};

struct Lane {
  RecordedProcess process;
  std::vector<Segment> segments;  // the last one runs on while `open`
  bool open = true;
  std::map<unsigned, Bytes> memory;  // now
  std::set<unsigned> gpus;           // every GPU it held memory on
  Bytes peak = 0;                    // its most, all GPUs together
  std::size_t order = 0;             // when it was first met
};

using ProcessKey = std::tuple<std::string, Pid, std::uint64_t>;

struct Lanes {
  std::map<ProcessKey, std::size_t> index;
  std::vector<Lane> all;

  // The lane of `p`, begun at `from` in `klass` when it has none yet.
  Lane& of(const RecordedProcess& p, double from, const std::string& klass) {
    const auto [it, added] = index.emplace(ProcessKey{p.boot_id, p.pid, p.start_ticks}, all.size());
    if (added) {
      Lane lane;
      lane.process = p;
      lane.segments.push_back({from, from, klass});
      lane.order = all.size();
      all.push_back(std::move(lane));
    }
    return all[it->second];
  }
};

void set_memory(Lane& lane, unsigned gpu, Bytes bytes) {
  lane.memory[gpu] = bytes;
  if (bytes > 0) lane.gpus.insert(gpu);
  Bytes sum = 0;
  for (const auto& [index, held] : lane.memory) sum += held;
  lane.peak = std::max(lane.peak, sum);
}

void end_lane(Lane& lane, double time) {
  if (!lane.open) return;
  lane.segments.back().to = time;
  lane.open = false;
}

// One holder event into the lanes. A process first met in an event other than `appeared` held
// before anything in the window said so (the data is partial): its lane begins at `since`.
void apply(Lanes& lanes, const HistoryEvent& e, double since) {
  if (!e.process) return;
  const std::string klass = e.klass.empty() ? "unknown" : e.klass;
  switch (e.kind) {
    case HistoryEventKind::kAppeared: {
      Lane& lane = lanes.of(*e.process, e.time, klass);
      if (!lane.open) {  // the same process again (its identity is unique): it came back
        lane.segments.push_back({e.time, e.time, klass});
        lane.open = true;
      }
      lane.peak = std::max(lane.peak, e.bytes.value_or(0));
      break;
    }
    case HistoryEventKind::kClassChanged: {
      Lane& lane = lanes.of(*e.process, since, e.detail.empty() ? klass : e.detail);
      if (lane.open && lane.segments.back().klass != klass) {
        lane.segments.back().to = e.time;
        lane.segments.push_back({e.time, e.time, klass});
      }
      break;
    }
    case HistoryEventKind::kMemoryChanged:
      if (e.gpu && e.bytes) set_memory(lanes.of(*e.process, since, "unknown"), *e.gpu, *e.bytes);
      break;
    case HistoryEventKind::kLeft: {
      Lane& lane = lanes.of(*e.process, since, klass);
      end_lane(lane, e.time);
      lane.peak = std::max(lane.peak, e.bytes.value_or(0));
      break;
    }
    default:
      break;
  }
}

// The lanes drawn: the kMaxLanes that held the most, in the order they were met; `hidden`
// counts the others.
std::vector<Lane> lanes_of(const HistoryPlotInput& in, std::size_t& hidden) {
  Lanes lanes;
  for (const HistoryHolder& h : in.at_since) {
    Lane& lane = lanes.of(h.process, in.since, h.klass);
    for (const auto& [gpu, bytes] : h.gpu_memory) set_memory(lane, gpu, bytes);
  }
  for (const HistoryEvent& e : in.events) apply(lanes, e, in.since);
  for (Lane& lane : lanes.all) end_lane(lane, in.until);
  std::vector<Lane> all = std::move(lanes.all);
  hidden = all.size() > kMaxLanes ? all.size() - kMaxLanes : 0;
  if (hidden > 0) {
    std::stable_sort(all.begin(), all.end(),
                     [](const Lane& a, const Lane& b) { return a.peak > b.peak; });
    all.resize(kMaxLanes);
    std::sort(all.begin(), all.end(),
              [](const Lane& a, const Lane& b) { return a.order < b.order; });
  }
  return all;
}

// --- Marks: actions, Xids, NVML failures, restarts -------------------------------------------

struct Mark {
  double x = 0;
  std::vector<std::string> labels;  // of the events that fell on this pixel
  std::string label;                // what is shown
  std::optional<std::size_t> row;   // none: no room, the line only
  double left = 0;                  // the label's extent across
  double right = 0;
  bool anchor_end = false;
};

std::vector<Mark> marks_of(const RunRecord& record, const Coverage& coverage, const Frame& frame) {
  std::vector<std::pair<double, std::string>> found;
  for (const RunEvent& e : record.events) {
    if (e.kind == RunEventKind::kNote) found.emplace_back(frame.since + e.t, e.detail);
  }
  for (double t : coverage.restarts) found.emplace_back(t, "recorder restarted");
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Mark> marks;
  for (const auto& [t, label] : found) {
    const double x = frame.x_of(t);
    // Within two pixels: one line, one label.
    if (marks.empty() || x - marks.back().x > 2) {
      Mark mark;
      mark.x = x;
      marks.push_back(std::move(mark));
    }
    marks.back().labels.push_back(label);
  }
  for (Mark& m : marks) m.label = joined_labels(m.labels, 2);
  return marks;
}

// Whether `m`'s label can sit in `row`: it overlaps no label there, its line crosses no label
// in a row below it, and no line of a label in this row or above runs through it.
bool fits(const Mark& m, std::size_t row, const std::vector<Mark>& placed) {
  for (const Mark& p : placed) {
    if (!p.row) continue;
    if (*p.row == row && m.left < p.right + 8 && p.left < m.right + 8) return false;
    if (*p.row < row && m.x > p.left - 3 && m.x < p.right + 3) return false;
    if (*p.row >= row && p.x > m.left - 3 && p.x < m.right + 3) return false;
  }
  return true;
}

// Label rows above the memory panel, row 0 nearest it: each label in the lowest row it fits,
// right to left, so that a cluster of marks climbs leftwards as a staircase (each line passes
// left of the labels below it). Returns the rows used.
std::size_t place_marks(std::vector<Mark>& marks) {
  std::vector<Mark> placed;
  std::size_t rows = 0;
  for (auto it = marks.rbegin(); it != marks.rend(); ++it) {
    Mark& m = *it;
    const double width = text_width(m.label, kSansCharWidth);
    m.anchor_end = m.x + 3 + width > kWidth - 4;  // near the right edge: left of its line
    m.left = m.anchor_end ? m.x - 3 - width : m.x + 3;
    m.right = m.anchor_end ? m.x - 3 : m.x + 3 + width;
    for (std::size_t row = 0; row < kMaxMarkRows; ++row) {
      if (fits(m, row, placed)) {
        m.row = row;
        rows = std::max(rows, row + 1);
        break;
      }
    }
    placed.push_back(m);
  }
  return rows;
}

std::string mark_lines(const std::vector<Mark>& marks, const Layout& layout) {
  std::string svg;
  for (const Mark& m : marks) {
    const double label_y =
        layout.memory_top - 6 - static_cast<double>(m.row.value_or(0)) * kMarkRowHeight;
    // Across both panels, not across the time axis's labels between them.
    svg += fmt::format(
        "<g class=\"mark\" stroke=\"#666\" stroke-dasharray=\"4 3\">"
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>"
        "<line x1=\"{0:.1f}\" y1=\"{3:.1f}\" x2=\"{0:.1f}\" y2=\"{4:.1f}\"/></g>\n",
        m.x, m.row ? label_y - 10 : layout.memory_top, layout.memory_bottom, layout.lanes_top,
        layout.lanes_bottom);
    if (!m.row) continue;
    svg += fmt::format(
        "<text class=\"mark-label\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#333\" "
        "text-anchor=\"{}\">{}</text>\n",
        m.anchor_end ? m.x - 3 : m.x + 3, label_y, m.anchor_end ? "end" : "start",
        xml_text(m.label));
  }
  return svg;
}

// --- The clock-time axis ---------------------------------------------------------------------

// Grid lines through both panels at each tick, the labels under the memory panel (and under
// the lanes too when there are many).
std::string time_axis(const Frame& frame, const Layout& layout, std::size_t lanes) {
  std::string svg =
      fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#333\"/>\n",
                  kLeft, layout.memory_bottom, kLeft + kPlotWidth);
  for (const auto& [tick, label] : clock_tick_labels(frame.since, frame.until)) {
    const double x = frame.x_of(tick);
    svg += fmt::format(
        "<g stroke=\"#e4e4e4\"><line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>"
        "<line x1=\"{0:.1f}\" y1=\"{3:.1f}\" x2=\"{0:.1f}\" y2=\"{4:.1f}\"/></g>\n"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"{5:.1f}\" text-anchor=\"middle\">{6}</text>\n",
        x, layout.memory_top, layout.memory_bottom, layout.lanes_top, layout.lanes_bottom,
        layout.memory_bottom + 16, xml_text(label));
    if (lanes >= 8) {
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x,
                         layout.lanes_bottom + 14, xml_text(label));
    }
  }
  return svg;
}

// --- The memory panel ------------------------------------------------------------------------

struct MemoryScale {
  double top = 0;
  double gib = 1;
  [[nodiscard]] double y_of(double bytes) const {
    const double share = std::clamp(bytes / static_cast<double>(kGiB) / gib, 0.0, 1.0);
    return top + kMemoryHeight * (1 - share);
  }
};

std::string memory_axis(const MemoryScale& scale) {
  std::string svg =
      fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{0}\" y2=\"{2:.1f}\" stroke=\"#333\"/>\n",
                  kLeft, scale.top, scale.top + kMemoryHeight);
  const double step = nice_step(scale.gib, 5);
  for (int i = 0; i * step <= scale.gib + 1e-9; ++i) {
    const double gib = i * step;
    const double y = scale.y_of(gib * static_cast<double>(kGiB));
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        kLeft, y, kLeft + kPlotWidth, kLeft - 6, y + 4, gib);
  }
  const double middle = scale.top + kMemoryHeight / 2;
  svg += fmt::format(
      "<text x=\"{0}\" y=\"{1:.1f}\" transform=\"rotate(-90 {0} {1:.1f})\" "
      "text-anchor=\"middle\">GPU memory (GiB)</text>\n",
      kLeft - 44, middle);
  return svg;
}

// A stepped line per GPU (a polyline per recorded span: none across a gap), and the legend in
// the column left of the axis.
std::string memory_lines(const std::vector<GpuSeries>& series, const MemoryScale& scale,
                         const Frame& frame) {
  std::string svg;
  bool any = false;
  // Past eight GPUs the colours come round again, dashed; the legend's rows close up to fit
  // sixteen.
  const double row = std::min(16.0, (kMemoryHeight - 14) / static_cast<double>(series.size()));
  for (std::size_t g = 0; g < series.size(); ++g) {
    const char* colour = kSeriesColours[g % kSeriesColours.size()];
    const char* dashes = g >= kSeriesColours.size() ? R"( stroke-dasharray="6 3")" : "";
    for (const auto& run : series[g].runs) {
      if (run.empty()) continue;
      any = true;
      std::string points;
      for (const auto& [t, bytes] : run) {
        points += fmt::format("{:.1f},{:.1f} ", frame.x_of(t), scale.y_of(bytes));
      }
      points.pop_back();
      svg += fmt::format(
          "<polyline class=\"gpu\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} "
          "points=\"{}\"/>\n",
          colour, dashes, points);
    }
    const double y = scale.top + 14 + static_cast<double>(g) * row;
    svg += fmt::format(
        "<line x1=\"10\" y1=\"{0:.1f}\" x2=\"28\" y2=\"{0:.1f}\" stroke=\"{1}\" "
        "stroke-width=\"3\"{2}/><text x=\"32\" y=\"{3:.1f}\" font-size=\"11\">GPU {4}, peak "
        "{5}</text>\n",
        y - 4, colour, dashes, y, series[g].index,
        format_bytes(static_cast<Bytes>(series[g].peak)));
  }
  if (!any) {
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#777\" {}>"
        "no GPU memory recorded in this window</text>\n",
        kLeft + kPlotWidth / 2, scale.top + kMemoryHeight / 2, kHalo);
  }
  return svg;
}

std::string memory_panel(const std::vector<GpuSeries>& series, const Frame& frame,
                         const Layout& layout) {
  double peak = 0;
  for (const GpuSeries& s : series) peak = std::max(peak, s.peak);
  const MemoryScale scale{layout.memory_top, std::max(peak / static_cast<double>(kGiB), 1.0) * 1.1};
  return memory_axis(scale) + memory_lines(series, scale, frame);
}

// The gaps: a hatched band labelled "not recorded" in the memory panel, and the same hatching,
// lighter, over the lanes (a holder's bar runs on across a gap: it was there before and after).
std::string gap_bands(const std::vector<Span>& gaps, std::size_t lanes, const Frame& frame,
                      const Layout& layout) {
  std::string svg;
  for (const Span& gap : gaps) {
    const double x = frame.x_of(gap.from);
    const double width = frame.x_of(gap.to) - x;
    svg += fmt::format(
        "<rect class=\"not-recorded\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
        "height=\"{}\" fill=\"url(#unrecorded)\"/>\n",
        x, layout.memory_top, width, kMemoryHeight);
    if (lanes > 0) {
      svg += fmt::format(
          "<rect class=\"not-recorded-lanes\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
          "height=\"{:.1f}\" fill=\"url(#unrecorded)\" opacity=\"0.55\"/>\n",
          x, layout.lanes_top, width, layout.lanes_bottom - layout.lanes_top);
    }
    const double middle = x + width / 2;
    if (width >= text_width("not recorded", kSansCharWidth) + 8) {
      svg += fmt::format(
          "<text class=\"gap-label\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#555\" "
          "text-anchor=\"middle\" {}>not recorded</text>\n",
          middle, layout.memory_top + 14, kHalo);
    } else if (width >= 14) {
      svg += fmt::format(
          "<text class=\"gap-label\" x=\"{0:.1f}\" y=\"{1:.1f}\" font-size=\"11\" fill=\"#555\" "
          "transform=\"rotate(-90 {0:.1f} {1:.1f})\" text-anchor=\"end\" {2}>not recorded</text>\n",
          middle + 4, layout.memory_top + 6, kHalo);
    }
  }
  return svg;
}

// --- The lanes -------------------------------------------------------------------------------

// "8.0 GiB, GPU 0", "64.0 GiB, 8 GPUs": its peak and where it held memory.
std::string peak_text(const Lane& lane) {
  std::string text = format_bytes(lane.peak);
  if (lane.gpus.empty()) return text;
  if (lane.gpus.size() > 3) return text + fmt::format(", {} GPUs", lane.gpus.size());
  std::string list;
  for (unsigned gpu : lane.gpus) list += (list.empty() ? "" : ",") + std::to_string(gpu);
  return text + ", GPU " + list;
}

// The "leftover" tag where a lane became one, on its bar; returns where the tag ends.
double leftover_tag(std::string& svg, double x, double bar_y) {
  constexpr double kTagWidth = 46;
  svg += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" rx=\"2\" fill=\"white\" "
      "fill-opacity=\"0.9\" stroke=\"#8b0000\"/><text class=\"leftover-mark\" x=\"{:.1f}\" "
      "y=\"{:.1f}\" font-size=\"9\" font-weight=\"bold\" fill=\"#8b0000\">leftover</text>\n",
      x + 2, bar_y + 1.5, kTagWidth, kBarHeight - 3, x + 5, bar_y + kBarHeight - 4);
  return x + 2 + kTagWidth;
}

// A lane's bar: a rect per class it had, leftovers hatched and outlined and tagged where
// they began; returns where the bar (or its last tag) ends.
double lane_bar(std::string& svg, const Lane& lane, const Frame& frame, double bar_y) {
  double end = kLeft;
  bool was_leftover = false;
  for (const Segment& s : lane.segments) {
    const double x = frame.x_of(s.from);
    const double width = std::max(frame.x_of(s.to) - x, 1.5);
    const bool leftover = is_leftover(s.klass);
    svg += fmt::format(
        "<rect class=\"segment{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" "
        "fill=\"{}\"><title>{}</title></rect>\n",
        leftover ? " leftover" : "", x, bar_y, width, kBarHeight, holder_class_colour(s.klass),
        xml_text(s.klass));
    end = std::max(end, x + width);
    if (leftover) {
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" "
          "fill=\"url(#leftover)\" stroke=\"#5a0000\" stroke-width=\"1.5\"/>\n",
          x, bar_y, width, kBarHeight);
      if (!was_leftover) end = std::max(end, leftover_tag(svg, x, bar_y));
    }
    was_leftover = leftover;
  }
  return end;
}

std::string lane_svg(const Lane& lane, std::size_t row, const Frame& frame, double top) {
  const double y = top + static_cast<double>(row) * kLaneHeight;
  std::string svg = "<g class=\"lane\">";
  const std::string who =
      fmt::format("pid {} {}", lane.process.pid, command_text(lane.process.argv));
  svg += fmt::format("<title>{} ({})</title>\n", xml_text(cut_for_display(who, 400)),
                     xml_text(lane.process.user));
  const double bar_y = y + (kLaneHeight - kBarHeight) / 2;
  const auto chars = static_cast<std::size_t>((kLeft - 20) / kMonoCharWidth);
  svg += fmt::format(
      "<text class=\"lane-label\" x=\"10\" y=\"{:.1f}\" font-family=\"monospace\" "
      "font-size=\"11\">{}</text>\n",
      bar_y + kBarHeight - 3, xml_text(cut_for_display(who, chars)));
  const double end = lane_bar(svg, lane, frame, bar_y);
  const std::string peak = peak_text(lane);
  const double peak_x = std::min(end + 5, kWidth - 4 - text_width(peak, kSansCharWidth));
  svg += fmt::format("<text class=\"peak\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{}</text>",
                     peak_x, bar_y + kBarHeight - 3, xml_text(peak));
  return svg + "</g>\n";
}

// Every other lane shaded across the whole width, under the grid: the eye follows a label to
// its bar.
std::string lane_stripes(std::size_t lanes, const Layout& layout) {
  std::string svg;
  for (std::size_t row = 1; row < lanes; row += 2) {
    svg +=
        fmt::format("<rect x=\"0\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\"/>\n",
                    layout.lanes_top + static_cast<double>(row) * kLaneHeight, kWidth, kLaneHeight);
  }
  return svg;
}

std::string lanes_panel(const std::vector<Lane>& lanes, std::size_t hidden, const Frame& frame,
                        const Layout& layout) {
  std::string svg = fmt::format(
      "<text x=\"10\" y=\"{:.1f}\" font-weight=\"bold\">Holders{}</text>\n", layout.lanes_top - 8,
      hidden > 0
          ? fmt::format(" ({} that held the most of {})", lanes.size(), lanes.size() + hidden)
          : "");
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    svg += lane_svg(lanes[i], i, frame, layout.lanes_top);
  }
  if (lanes.empty()) {
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#888\">no process "
        "held a device in this window</text>\n",
        kLeft + kPlotWidth / 2, layout.lanes_top + 14);
  }
  if (hidden > 0) {
    svg += fmt::format("<text x=\"10\" y=\"{:.1f}\" fill=\"#555\">and {} more holders</text>\n",
                       layout.lanes_bottom + 14, hidden);
  }
  return svg;
}

// --- The legend ------------------------------------------------------------------------------

// Swatches for the classes drawn (in kHolderClassColours's order, others after), the leftover
// hatching and the gaps', left to right, wrapping; returns the height used.
double legend(std::string& svg, const std::vector<Lane>& lanes, bool gaps, double top) {
  std::set<std::string> used;
  for (const Lane& lane : lanes) {
    for (const Segment& s : lane.segments) used.insert(s.klass);
  }
  std::vector<std::pair<std::string, std::string>> entries;  // (fill, label)
  for (const ClassColour& c : kHolderClassColours) {
    if (used.erase(c.name) > 0) entries.emplace_back(c.colour, c.name);
  }
  for (const std::string& other : used) entries.emplace_back(kOtherClassColour, other);
  if (std::any_of(entries.begin(), entries.end(),
                  [](const auto& e) { return is_leftover(e.second); }))
    entries.emplace_back("url(#leftover-swatch)", "leftover (the owner is gone)");
  if (gaps) entries.emplace_back("url(#unrecorded)", "not recorded");
  double x = 10;
  double y = top + 14;
  for (const auto& [fill, label] : entries) {
    const double width = 20 + text_width(label, kSansCharWidth) + 14;
    if (x + width > kWidth - 10) {
      x = 10;
      y += 18;
    }
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"14\" height=\"11\" fill=\"{}\" stroke=\"#999\" "
        "stroke-width=\"0.5\"/><text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{}</text>\n",
        x, y - 10, fill, x + 19, y, xml_text(label));
    x += width;
  }
  return entries.empty() ? 0 : y - top + 8;
}

// --- The document ----------------------------------------------------------------------------

Layout layout_of(std::size_t mark_rows, std::size_t lanes, std::size_t hidden) {
  Layout layout;
  layout.memory_top =
      kHeaderHeight + static_cast<double>(std::max<std::size_t>(mark_rows, 1)) * kMarkRowHeight + 8;
  layout.memory_bottom = layout.memory_top + kMemoryHeight;
  layout.lanes_top = layout.memory_bottom + 52;
  layout.lanes_bottom =
      layout.lanes_top + static_cast<double>(std::max<std::size_t>(lanes, 1)) * kLaneHeight;
  layout.bottom = layout.lanes_bottom + (hidden > 0 ? 20 : 0) + (lanes >= 8 ? 20 : 0) + 8;
  return layout;
}

std::string document_start(double height, const std::string& title, const std::string& subtitle) {
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kWidth, height);
  // The hatchings: grey for the gaps, white stripes over a leftover's colour (and, for the
  // legend, over a neutral one).
  svg +=
      "<defs><pattern id=\"unrecorded\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f0f0f0\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c8c8c8\" stroke-width=\"3\"/></pattern>"
      "<pattern id=\"leftover\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"5\" stroke=\"white\" "
      "stroke-opacity=\"0.7\" stroke-width=\"2\"/></pattern>"
      "<pattern id=\"leftover-swatch\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"5\" height=\"5\" fill=\"#888\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"5\" stroke=\"white\" stroke-width=\"2\"/></pattern>"
      "</defs>\n";
  svg += fmt::format("<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                     xml_text(title));
  svg += fmt::format("<text x=\"10\" y=\"38\" fill=\"#555\">{}</text>\n", xml_text(subtitle));
  return svg;
}

}  // namespace

std::string render(const HistoryPlotInput& input) {
  const Frame frame{input.since, input.until > input.since ? input.until : input.since + 1};
  const Coverage coverage = coverage_of(input);
  // The memory steps and the marks' labels: history_as_record's (output/history_view.h).
  const RunRecord record =
      history_as_record(input.at_since, input.events, frame.since, frame.until);
  const std::vector<GpuSeries> series =
      memory_series(record, frame.since, recorded_spans(coverage.gaps, frame.since, frame.until));
  std::size_t hidden = 0;
  const std::vector<Lane> lanes = lanes_of(input, hidden);
  std::vector<Mark> marks = marks_of(record, coverage, frame);
  const std::size_t mark_rows = place_marks(marks);
  const Layout layout = layout_of(mark_rows, lanes.size(), hidden);
  std::string body = lane_stripes(lanes.size(), layout) + time_axis(frame, layout, lanes.size()) +
                     lanes_panel(lanes, hidden, frame, layout) +
                     gap_bands(coverage.gaps, lanes.size(), frame, layout) +
                     memory_panel(series, frame, layout) + mark_lines(marks, layout);
  const std::size_t unlabelled = static_cast<std::size_t>(
      std::count_if(marks.begin(), marks.end(), [](const Mark& m) { return !m.row; }));
  double bottom = layout.bottom + legend(body, lanes, !coverage.gaps.empty(), layout.bottom);
  if (unlabelled > 0) {
    body += fmt::format(
        "<text x=\"10\" y=\"{:.1f}\" fill=\"#555\">{} mark{} too close to others to label: "
        "gpuclean history lists them</text>\n",
        bottom + 14, unlabelled, unlabelled == 1 ? "" : "s");
    bottom += 22;
  }
  return document_start(std::ceil(bottom + 6), input.title, input.subtitle) + body + "</svg>\n";
}

}  // namespace history_svg

std::string render_history_svg(const HistoryPlotInput& input) {
  return history_svg::render(input);
}

}  // namespace gpuclean::output
