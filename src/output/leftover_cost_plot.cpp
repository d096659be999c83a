#include "output/leftover_cost_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/escape.h"
#include "core/units.h"
#include "core/wall_time.h"
#include "output/history_view.h"
#include "output/leftover_cost_view.h"
#include "output/svg_text.h"

namespace gpuclean::output {
// The picture's own names in a namespace of their own: a unity build (gpuclean.sh's: one batch
// per library) puts this file in one translation unit with run_plot.cpp and history_plot.cpp,
// where anonymous namespaces merge.
namespace leftover_svg {
namespace {

// Across: the bars' keys end at kBarsLeft, the longest bar kFigureRoom short of the canvas's
// edge (its figure after it). The lanes' labels (user, pid and command, GiB-hours) end at
// kLanesLeft, the time axis runs to kLanesRight, how each leftover ended is written after it.
constexpr double kCanvasWidth = 1200;
constexpr double kSideMargin = 10;
constexpr double kBarsLeft = 240;
constexpr double kFigureRoom = 200;
constexpr double kLanesLeft = 460;
constexpr double kLanesRight = 1000;
constexpr double kUserColumn = 92;  // a lane's pid and command start here, after its user
// Down: a bar's row and a lane's, each with its bar.
constexpr double kBarRowHeight = 24;
constexpr double kCostBarHeight = 16;
constexpr double kLeftoverRowHeight = 22;
constexpr double kLeftoverBarHeight = 12;
constexpr std::size_t kMaxBars = 12;
constexpr std::size_t kMaxLeftoverLanes = 12;
// 11 px monospace is 0.6 em a character (DejaVu Sans Mono, Liberation Mono).
constexpr double kMonoWidth = 6.7;
// Memory no process accounts for: grey, nobody's colour.
constexpr const char* kUnattributedColour = "#9a9a9a";
constexpr const char* kKilledColour = "#8b0000";

// --- Text ------------------------------------------------------------------------------------

// How many characters of `char_width` fit across `width` (at least one).
std::size_t chars_fitting(double width, double char_width) {
  return static_cast<std::size_t>(std::max(1.0, std::floor(width / char_width)));
}

// User text cut to `chars` characters shown, then made safe for XML.
std::string fitted(std::string_view text, std::size_t chars) {
  return xml_text(cut_for_display(text, chars));
}

// "12.3": GiB-hours with the decimals their size needs, "<0.01" for a trace.
std::string gib_hours_number(double byte_seconds) {
  const double value = gib_hours(byte_seconds);
  if (value <= 0) return "0";
  if (value >= 99.95) return fmt::format("{:.0f}", value);
  if (value >= 0.995) return fmt::format("{:.1f}", value);
  if (value >= 0.005) return fmt::format("{:.2f}", value);
  return "<0.01";
}

std::string gib_hours_label(double byte_seconds) {
  return gib_hours_number(byte_seconds) + " GiB-h";
}

const char* cost_class_colour(std::string_view klass) {
  return klass == kUnattributedClass ? kUnattributedColour : holder_class_colour(klass);
}

// The classes in the bars' and the legend's order: the leftover classes, unattributed memory,
// then any other the report names.
std::vector<std::string> class_order(const std::map<std::string, double>& seen) {
  std::vector<std::string> order(std::begin(kLeftoverClasses), std::end(kLeftoverClasses));
  order.emplace_back(kUnattributedClass);
  for (const auto& entry : seen) {
    if (std::find(order.begin(), order.end(), entry.first) == order.end()) {
      order.push_back(entry.first);
    }
  }
  return order;
}

// "orphan 38.0, heir 2.0": the classes' GiB-hours, in `order`, those above nothing.
std::string class_breakdown(const std::map<std::string, double>& classes,
                            const std::vector<std::string>& order) {
  std::string text;
  for (const std::string& klass : order) {
    const auto it = classes.find(klass);
    if (it == classes.end() || it->second <= 0) continue;
    if (!text.empty()) text += ", ";
    text += klass + " " + gib_hours_number(it->second);
  }
  return text;
}

// --- The heading -----------------------------------------------------------------------------

// Above the bars: the total and its classes, how idle the leftovers were where that is known,
// and what the window does not count (the recorder down, before recording began).
double summary(std::string& svg, const LeftoverCostReport& report, double top) {
  const std::size_t chars = chars_fitting(kCanvasWidth - 2 * kSideMargin, kTextCharWidth);
  double y = top;
  if (!report.groups.empty()) {
    std::string text = fmt::format(
        "{} held in all: {}", gib_hours_label(report.byte_seconds),
        class_breakdown(report.class_byte_seconds, class_order(report.class_byte_seconds)));
    if (report.known_byte_seconds > 0) {
      text += fmt::format(
          "; {:.0f}% of the leftovers' GiB-hours idle (of those whose activity is known)",
          100 * report.idle_byte_seconds / report.known_byte_seconds);
    }
    svg += fmt::format("<text class=\"summary\" x=\"{}\" y=\"{:.1f}\">{}</text>\n", kSideMargin, y,
                       fitted(text, chars));
    y += 17;
  }
  std::vector<std::string> notes;
  if (report.unwatched_seconds > 0) {
    notes.push_back(
        fmt::format("The recorder was down for {} of this window: nothing was counted then.",
                    format_age(report.unwatched_seconds)));
  }
  if (report.recording_began && *report.recording_began > report.since) {
    notes.push_back(fmt::format("Recording began {}: nothing is known before{}.",
                                format_local_time(*report.recording_began),
                                report.leftovers.empty() ? "" : " (hatched below)"));
  }
  for (const std::string& note : notes) {
    svg += fmt::format("<text class=\"note\" x=\"{}\" y=\"{:.1f}\" fill=\"#8a4b00\">{}</text>\n",
                       kSideMargin, y, fitted(note, chars));
    y += 17;
  }
  return y;
}

// No group held anything: a message in a box where the bars would be.
double nothing_held(std::string& svg, double top) {
  constexpr double kBoxHeight = 90;
  svg += fmt::format(
      "<rect x=\"{0}\" y=\"{1:.1f}\" width=\"{2}\" height=\"{3}\" rx=\"6\" fill=\"#f3f7f3\" "
      "stroke=\"#b8d0b8\"/>\n"
      "<text class=\"empty\" x=\"{4}\" y=\"{5:.1f}\" text-anchor=\"middle\" font-size=\"16\" "
      "font-weight=\"bold\" fill=\"#2e5e2e\">No leftovers held memory in this window</text>\n"
      "<text x=\"{4}\" y=\"{6:.1f}\" text-anchor=\"middle\" fill=\"#555\">no orphan, heir or "
      "zombie-leader process held GPU memory, and no memory went unaccounted for</text>\n",
      kSideMargin, top + 6, kCanvasWidth - 2 * kSideMargin, kBoxHeight, kCanvasWidth / 2,
      top + 6 + kBoxHeight / 2 - 2, top + 6 + kBoxHeight / 2 + 20);
  return top + kBoxHeight + 16;
}

// --- The bars: GiB-hours per group -----------------------------------------------------------

struct Bar {
  std::string key;
  bool synthetic = false;  // "(unattributed)" or "N others": no name from the data
  double byte_seconds = 0;
  double idle_byte_seconds = 0;
  std::size_t leftovers = 0;
  std::map<std::string, double> classes;
};

// The groups, most first, at most kMaxBars: past that the last bar sums the rest. An owner is
// named as the text report names it ("slurm job 4242").
std::vector<Bar> bars_of(const std::vector<LeftoverCostGroup>& groups, CostGrouping by) {
  const std::size_t shown = groups.size() > kMaxBars ? kMaxBars - 1 : groups.size();
  std::vector<Bar> bars;
  for (std::size_t i = 0; i < shown; ++i) {
    const LeftoverCostGroup& g = groups[i];
    const bool owner = by == CostGrouping::kOwner && g.key.find(':') != std::string::npos;
    bars.push_back({owner ? recorded_owner_text(g.key) : g.key, g.key == kUnattributedKey,
                    g.byte_seconds, g.idle_byte_seconds, g.leftovers, g.class_byte_seconds});
  }
  if (shown < groups.size()) {
    Bar others;
    others.key = fmt::format("{} others", groups.size() - shown);
    others.synthetic = true;
    for (std::size_t i = shown; i < groups.size(); ++i) {
      const LeftoverCostGroup& g = groups[i];
      others.byte_seconds += g.byte_seconds;
      others.idle_byte_seconds += g.idle_byte_seconds;
      others.leftovers += g.leftovers;
      for (const auto& [klass, byte_seconds] : g.class_byte_seconds) {
        others.classes[klass] += byte_seconds;
      }
    }
    bars.push_back(std::move(others));
  }
  return bars;
}

// "alice: 40.0 GiB-h (orphan 38.0, heir 2.0), 2 leftovers": a bar's tooltip.
std::string bar_tooltip(const Bar& bar, const std::vector<std::string>& order) {
  std::string text =
      fmt::format("{}: {} ({})", cut_for_display(bar.key, 400), gib_hours_label(bar.byte_seconds),
                  class_breakdown(bar.classes, order));
  if (bar.leftovers > 0) {
    text += fmt::format(", {} leftover{}", bar.leftovers, bar.leftovers == 1 ? "" : "s");
  }
  return text;
}

// One bar: its key right-aligned before it, a rect per class (kept exact: their widths are the
// figures' ratios), an outline over them all, and its figure after it.
void bar_svg(std::string& svg, const Bar& bar, const std::vector<std::string>& order, double scale,
             double y) {
  const double bar_y = y + (kBarRowHeight - kCostBarHeight) / 2;
  const double baseline = bar_y + kCostBarHeight - 4;
  svg +=
      fmt::format("<g class=\"cost-group\"><title>{}</title>\n", xml_text(bar_tooltip(bar, order)));
  svg += fmt::format(
      "<text class=\"cost-key\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\"{}>{}</text>\n",
      kBarsLeft - 8, baseline, bar.synthetic ? R"( fill="#555" font-style="italic")" : "",
      fitted(bar.key, chars_fitting(kBarsLeft - 8 - kSideMargin, kTextCharWidth)));
  double x = kBarsLeft;
  for (const std::string& klass : order) {
    const auto it = bar.classes.find(klass);
    if (it == bar.classes.end() || it->second <= 0) continue;
    const double width = it->second * scale;
    svg += fmt::format(
        "<rect class=\"cost-segment\" data-class=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" "
        "width=\"{:.2f}\" height=\"{}\" fill=\"{}\"/>\n",
        xml_text(klass), x, bar_y, width, kCostBarHeight, cost_class_colour(klass));
    x += width;
  }
  const double width = std::max(bar.byte_seconds * scale, 1.0);
  svg += fmt::format(
      "<rect class=\"cost-bar\" x=\"{}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" "
      "fill=\"none\" stroke=\"#333\" stroke-width=\"0.8\"/>\n",
      kBarsLeft, bar_y, width, kCostBarHeight);
  std::string more;
  if (bar.leftovers > 0) {
    more = fmt::format(", {} leftover{}", bar.leftovers, bar.leftovers == 1 ? "" : "s");
  }
  svg += fmt::format(
      "<text class=\"cost-figure\" x=\"{:.1f}\" y=\"{:.1f}\" font-weight=\"bold\">{}"
      "<tspan font-weight=\"normal\" fill=\"#666\">{}</tspan></text>\n",
      kBarsLeft + width + 6, baseline, xml_text(gib_hours_label(bar.byte_seconds)), more);
  svg += "</g>\n";
}

// The classes' swatches, right-aligned at `right` on the baseline `y`: those the report has.
void class_legend(std::string& svg, const std::vector<std::string>& order,
                  const std::map<std::string, double>& totals, double right, double y) {
  struct Entry {
    std::string klass;
    std::string label;
    double width = 0;
  };
  std::vector<Entry> entries;
  double x = right;
  for (const std::string& klass : order) {
    const auto it = totals.find(klass);
    if (it == totals.end() || it->second <= 0) continue;
    std::string label = klass == kUnattributedClass ? "unattributed (no process)" : klass;
    const double width = 20 + text_width(label, kSansCharWidth) + 14;
    entries.push_back({klass, std::move(label), width});
    x -= width;
  }
  for (const Entry& e : entries) {
    svg += fmt::format(
        "<rect class=\"legend-swatch\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"14\" height=\"11\" "
        "fill=\"{}\"/><text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{}</text>\n",
        x, y - 10, cost_class_colour(e.klass), x + 19, y, xml_text(e.label));
    x += e.width;
  }
}

// The grouping's heading, the legend, the bars; returns the bottom.
double bars_section(std::string& svg, const LeftoverCostReport& report, double top) {
  const std::vector<Bar> bars = bars_of(report.groups, report.by);
  std::map<std::string, double> seen = report.class_byte_seconds;
  for (const Bar& bar : bars) {
    for (const auto& [klass, byte_seconds] : bar.classes) seen[klass] += byte_seconds;
  }
  const std::vector<std::string> order = class_order(seen);
  const char* by = report.by == CostGrouping::kGpu ? "GPU" : to_string(report.by);
  svg += fmt::format(
      "<text class=\"heading\" x=\"{}\" y=\"{:.1f}\" font-size=\"13\" font-weight=\"bold\">"
      "GiB-hours held by leftovers, by {}</text>\n",
      kSideMargin, top + 14, by);
  class_legend(svg, order, seen, kCanvasWidth - kSideMargin, top + 14);
  double most = 0;
  for (const Bar& bar : bars) most = std::max(most, bar.byte_seconds);
  const double scale = most > 0 ? (kCanvasWidth - kFigureRoom - kBarsLeft) / most : 0;
  const double bars_top = top + 24;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    bar_svg(svg, bars[i], order, scale, bars_top + static_cast<double>(i) * kBarRowHeight);
  }
  const double bottom = bars_top + static_cast<double>(bars.size()) * kBarRowHeight;
  svg +=
      fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{0}\" y2=\"{2:.1f}\" stroke=\"#333\"/>\n",
                  kBarsLeft, bars_top, bottom);
  return bottom + 18;
}

// --- The lanes: the worst leftovers over time ------------------------------------------------

struct Window {
  double since = 0;
  double until = 1;
  [[nodiscard]] double x_of(double t) const {
    const double share = std::clamp((t - since) / (until - since), 0.0, 1.0);
    return kLanesLeft + (kLanesRight - kLanesLeft) * share;
  }
};

// The leftovers with the most byte-seconds, most first, at most kMaxLeftoverLanes.
std::vector<const LeftoverEpisode*> worst_of(const std::vector<LeftoverEpisode>& all) {
  std::vector<const LeftoverEpisode*> worst;
  worst.reserve(all.size());
  for (const LeftoverEpisode& e : all) worst.push_back(&e);
  std::stable_sort(worst.begin(), worst.end(),
                   [](const LeftoverEpisode* a, const LeftoverEpisode* b) {
                     return a->byte_seconds > b->byte_seconds;
                   });
  if (worst.size() > kMaxLeftoverLanes) worst.resize(kMaxLeftoverLanes);
  return worst;
}

// "killed by root", "exited", "no longer a leftover (stuck)", "still there".
std::string how_it_ended(const LeftoverEnd& end) {
  switch (end.how) {
    case LeftoverEnd::How::kKilled:
      return fmt::format("killed by {}{}", end.by_user.empty() ? "gpuclean" : end.by_user,
                         end.by_command == "run" ? " (gpuclean run)" : "");
    case LeftoverEnd::How::kExited:
      return "exited";
    case LeftoverEnd::How::kReclassed:
      return end.detail.empty() ? "no longer a leftover"
                                : fmt::format("no longer a leftover (now {})", end.detail);
    case LeftoverEnd::How::kStillThere:
      return "still there";
  }
  return "";
}

// The mark right of a bar's end at `x`: a cross for a kill, a dot for an exit, a bar for a class
// change, an arrow for one still there.
std::string end_mark(LeftoverEnd::How how, double x, double middle) {
  std::string shape;
  switch (how) {
    case LeftoverEnd::How::kKilled:
      shape = fmt::format(
          "<path d=\"M{0:.1f},{1:.1f}L{2:.1f},{3:.1f}M{0:.1f},{3:.1f}L{2:.1f},{1:.1f}\" "
          "stroke=\"{4}\" stroke-width=\"2.2\"/>",
          x + 2, middle - 4, x + 10, middle + 4, kKilledColour);
      break;
    case LeftoverEnd::How::kExited:
      shape = fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"#444\"/>", x + 6,
                          middle);
      break;
    case LeftoverEnd::How::kReclassed:
      shape = fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#444\" "
          "stroke-width=\"2\"/>",
          x + 4, middle - 7, middle + 7);
      break;
    case LeftoverEnd::How::kStillThere:
      shape = fmt::format(
          "<path d=\"M{0:.1f},{1:.1f}L{2:.1f},{3:.1f}L{0:.1f},{4:.1f}Z\" fill=\"#444\"/>", x + 2,
          middle - 6, x + 10, middle, middle + 6);
      break;
  }
  return fmt::format("<g class=\"end-mark\" data-how=\"{}\">{}</g>", to_string(how), shape);
}

// "pid 4242 python3 serve.py (alice): orphan from 2026-12-05 10:00:00 for 5h 0m, 8.0 GiB at
// most, 40.0 GiB-h; killed by root at 2026-12-05 15:00:00".
std::string lane_tooltip(const LeftoverEpisode& e, double until) {
  std::string who = cut_for_display(e.process.user.empty() ? "?" : e.process.user, 64);
  if (!e.process.owner.empty()) {
    who += ", " + cut_for_display(recorded_owner_text(e.process.owner), 120);
  }
  std::string text = fmt::format(
      "pid {} {} ({}): {} from {} for {}, {} at most, {}; {}", e.process.pid,
      cut_for_display(command_text(e.process.argv), 400), who, e.klass, format_local_time(e.since),
      format_age(e.seconds(until)), format_bytes(e.peak_bytes), gib_hours_label(e.byte_seconds),
      cut_for_display(how_it_ended(e.end), 120));
  if (e.end.time) text += " at " + format_local_time(*e.end.time);
  return text;
}

// A lane's labels: its user, its pid and command in monospace, its GiB-hours right-aligned.
void lane_labels(std::string& svg, const LeftoverEpisode& e, double baseline) {
  const std::string figure = gib_hours_label(e.byte_seconds);
  const double figure_left = kLanesLeft - 8 - text_width(figure, kSansCharWidth);
  svg += fmt::format(
      "<text class=\"lane-user\" x=\"{}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#333\">{}</text>\n",
      kSideMargin, baseline,
      fitted(e.process.user.empty() ? "?" : e.process.user,
             chars_fitting(kUserColumn - kSideMargin - 12, kSansCharWidth)));
  const std::string who = fmt::format("pid {} {}", e.process.pid, command_text(e.process.argv));
  svg += fmt::format(
      "<text class=\"lane-command\" x=\"{}\" y=\"{:.1f}\" font-family=\"monospace\" "
      "font-size=\"11\">{}</text>\n",
      kUserColumn, baseline,
      fitted(who, chars_fitting(figure_left - 10 - kUserColumn, kMonoWidth)));
  svg += fmt::format(
      "<text class=\"lane-figure\" x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\" "
      "font-weight=\"bold\">{}</text>\n",
      kLanesLeft - 8, baseline, xml_text(figure));
}

std::string leftover_lane(const LeftoverEpisode& e, const Window& window, double y) {
  const double bar_y = y + (kLeftoverRowHeight - kLeftoverBarHeight) / 2;
  const double middle = bar_y + kLeftoverBarHeight / 2;
  std::string svg = fmt::format("<g class=\"leftover-lane\"><title>{}</title>\n",
                                xml_text(lane_tooltip(e, window.until)));
  lane_labels(svg, e, middle + 4);
  const double from = window.x_of(std::max(e.since, window.since));
  const double to = window.x_of(e.end.time.value_or(window.until));
  const double width = std::max(to - from, 2.0);
  svg += fmt::format(
      "<rect class=\"leftover-bar\" data-class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
      "height=\"{}\" fill=\"{}\"/>\n",
      xml_text(e.klass), from, bar_y, width, kLeftoverBarHeight, cost_class_colour(e.klass));
  const double end = from + width;
  svg += end_mark(e.end.how, end, middle);
  const double text_x = end + 14;
  const bool killed = e.end.how == LeftoverEnd::How::kKilled;
  svg += fmt::format(
      "<text class=\"end-label\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"{}\" "
      "stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">{}</text>\n",
      text_x, middle + 4, killed ? kKilledColour : "#333",
      fitted(how_it_ended(e.end),
             chars_fitting(kCanvasWidth - kSideMargin - text_x, kSansCharWidth)));
  return svg + "</g>\n";
}

// The clock ticks' grid lines through the lanes and their labels under them; before recording
// began, a hatched band ("not recorded").
std::string lanes_axis(const LeftoverCostReport& report, const Window& window, double top,
                       double bottom) {
  std::string svg;
  if (report.recording_began && *report.recording_began > window.since) {
    const double to = window.x_of(*report.recording_began);
    svg += fmt::format(
        "<rect class=\"not-recorded\" x=\"{0}\" y=\"{1:.1f}\" width=\"{2:.1f}\" "
        "height=\"{3:.1f}\" fill=\"url(#lc-unrecorded)\"/>\n",
        kLanesLeft, top, to - kLanesLeft, bottom - top);
    if (to - kLanesLeft >= text_width("not recorded", kSansCharWidth) + 8) {
      svg += fmt::format(
          "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#555\" text-anchor=\"middle\" "
          "stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">not recorded</text>\n",
          (kLanesLeft + to) / 2, bottom - 4);
    }
  }
  for (const auto& [tick, label] : clock_tick_labels(window.since, window.until)) {
    const double x = window.x_of(tick);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\" "
        "font-size=\"11\">{4}</text>\n",
        x, top, bottom + 4, bottom + 16, xml_text(label));
  }
  svg += fmt::format(
      "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#333\"/>"
      "<line x1=\"{0}\" y1=\"{3:.1f}\" x2=\"{0}\" y2=\"{1:.1f}\" stroke=\"#333\"/>\n",
      kLanesLeft, bottom, kLanesRight, top);
  return svg;
}

// The heading, a lane per leftover (every other one shaded, for the eye to follow a label to
// its bar), the time axis; returns the bottom.
double lanes_section(std::string& svg, const LeftoverCostReport& report, double top) {
  const Window window{report.since, report.until > report.since ? report.until : report.since + 1};
  const std::vector<const LeftoverEpisode*> worst = worst_of(report.leftovers);
  const std::string which =
      worst.size() < report.leftovers.size()
          ? fmt::format("the {} that held the most, of {}", worst.size(), report.leftovers.size())
          : fmt::format("{} leftover{}", worst.size(), worst.size() == 1 ? "" : "s");
  svg += fmt::format(
      "<text class=\"heading\" x=\"{}\" y=\"{:.1f}\" font-size=\"13\" font-weight=\"bold\">"
      "When each was a leftover, and how it ended <tspan font-weight=\"normal\" "
      "fill=\"#555\">({})</tspan></text>\n",
      kSideMargin, top + 14, which);
  const double lanes_top = top + 24;
  const double lanes_bottom = lanes_top + static_cast<double>(worst.size()) * kLeftoverRowHeight;
  for (std::size_t row = 1; row < worst.size(); row += 2) {
    svg += fmt::format("<rect x=\"0\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\"/>\n",
                       lanes_top + static_cast<double>(row) * kLeftoverRowHeight, kCanvasWidth,
                       kLeftoverRowHeight);
  }
  svg += lanes_axis(report, window, lanes_top, lanes_bottom);
  for (std::size_t row = 0; row < worst.size(); ++row) {
    svg += leftover_lane(*worst[row], window,
                         lanes_top + static_cast<double>(row) * kLeftoverRowHeight);
  }
  return lanes_bottom + 30;
}

// Memory no process accounted for, per GPU: it has no lane (nobody to draw), so a line says
// where and how much.
double unattributed_line(std::string& svg, const std::vector<UnattributedCost>& costs, double top) {
  std::string text = "Memory no process accounted for:";
  for (std::size_t i = 0; i < costs.size(); ++i) {
    const UnattributedCost& c = costs[i];
    text += fmt::format("{} GPU {} {} ({} at most, for {})", i == 0 ? "" : ";", c.gpu,
                        gib_hours_label(c.byte_seconds), format_bytes(c.peak_bytes),
                        format_age(c.seconds));
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{:.1f}\" width=\"14\" height=\"11\" fill=\"{}\"/>"
      "<text class=\"unattributed\" x=\"{}\" y=\"{:.1f}\">{}</text>\n",
      kSideMargin, top - 10, kUnattributedColour, kSideMargin + 20, top,
      fitted(text, chars_fitting(kCanvasWidth - 2 * kSideMargin - 20, kTextCharWidth)));
  return top + 12;
}

std::string document_head(double height, const std::string& title, const std::string& subtitle) {
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<defs><pattern id=\"lc-unrecorded\" width=\"6\" height=\"6\" "
      "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" "
      "height=\"6\" fill=\"#f0f0f0\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" "
      "stroke=\"#c8c8c8\" stroke-width=\"3\"/></pattern></defs>\n",
      kCanvasWidth, height);
  const double room = kCanvasWidth - 2 * kSideMargin;
  svg += fmt::format(
      "<text class=\"title\" x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
      kSideMargin, fitted(title, chars_fitting(room, kTitleCharWidth)));
  svg += fmt::format("<text class=\"subtitle\" x=\"{}\" y=\"38\" fill=\"#555\">{}</text>\n",
                     kSideMargin, fitted(subtitle, chars_fitting(room, kTextCharWidth)));
  return svg;
}

}  // namespace

std::string render(const LeftoverCostReport& report, const std::string& title,
                   const std::string& subtitle) {
  std::string body;
  double y = summary(body, report, 60);
  y = report.groups.empty() ? nothing_held(body, y) : bars_section(body, report, y + 6);
  if (!report.leftovers.empty()) y = lanes_section(body, report, y);
  if (!report.unattributed.empty()) y = unattributed_line(body, report.unattributed, y + 4);
  return document_head(std::ceil(y + 8), title, subtitle) + body + "</svg>\n";
}

}  // namespace leftover_svg

std::string render_leftover_cost_svg(const LeftoverCostReport& report, const std::string& title,
                                     const std::string& subtitle) {
  return leftover_svg::render(report, title, subtitle);
}

}  // namespace gpuclean::output
