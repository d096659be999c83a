// What the SVG renderers share (output/run_plot.h, output/history_plot.h,
// output/leftover_cost_plot.h): untrusted text made safe for XML, round axis steps, a clock-time
// axis's ticks, the colours of the per-GPU lines and of the holder classes, estimated text
// widths, and the rows of labels above a plot that keep the labels off the data and off each
// other.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuclean::output {

// One colour per GPU line, in GPU order (wrapping after eight).
inline constexpr std::array<const char*, 8> kSeriesColours = {
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

// The holder classes (core/model.h HolderClass) in the legends' order, each with its colour: a
// class looks the same in the history's lanes and in the leftover report's bars.
struct ClassColour {
  const char* name;
  const char* colour;
};
inline constexpr std::array<ClassColour, 9> kHolderClassColours = {{{"active", "#4c78a8"},
                                                                    {"orphan", "#e45756"},
                                                                    {"heir", "#f58518"},
                                                                    {"zombie-leader", "#b279a2"},
                                                                    {"foreign", "#c9a400"},
                                                                    {"stuck", "#9d755d"},
                                                                    {"frozen", "#72b7b2"},
                                                                    {"monitor", "#54a24b"},
                                                                    {"zombie", "#7f7f7f"}}};
inline constexpr const char* kOtherClassColour = "#bab0ac";

// `klass`'s colour in kHolderClassColours, kOtherClassColour for a class not there.
const char* holder_class_colour(std::string_view klass);

// `text` as XML character data or an attribute value: escape_terminal's printable UTF-8 (no
// control or bidirectional character reaches the viewer), then XML's five specials escaped.
std::string xml_text(std::string_view text);

// The command as a user could paste it, each argument a shell word; "?" for no arguments. Not
// escaped: cut it (core's cut_for_display) and pass it to xml_text.
std::string command_text(const std::vector<std::string>& argv);

// A "nice" axis step (1, 2 or 5 × 10^k) giving about `ticks` ticks up to `span`.
double nice_step(double span, int ticks);

// A clock-time axis from `since` to `until` (Unix seconds): round local times (localtime_r: TZ
// applies), at most about 10, each with its label: "10:30", "10:30:15" in a span under 3
// minutes, the date on the first tick of a new day ("12-06 00:00"), or on every tick ("12-06",
// local midnights) where they are days apart.
std::vector<std::pair<double, std::string>> clock_tick_labels(double since, double until);

// An SVG has no font metrics: text widths are estimates, a width per character. Measured with
// rsvg-convert and DejaVu Sans (fontconfig's sans-serif here; Liberation Sans and Arial are
// narrower): 11 px averages 5.7 to 6.5 px a character (digits the widest), 12 px 6.2 to 7.0,
// 14 px bold 8.1 to 9.0.
inline constexpr double kSansCharWidth = 6.4;   // 11 px
inline constexpr double kTextCharWidth = 7.0;   // 12 px, the documents' default size
inline constexpr double kTitleCharWidth = 9.0;  // 14 px bold

// The estimated width of `text` as escape_terminal shows it (a byte a character: text beyond
// ASCII counts wider than it is, never narrower).
double text_width(std::string_view text, double char_width);

// "Xid 79 ×3, kill (exit 0)": each label once, in the order met, with its count; `shown` at
// most, then how many other labels there are ("(+2 more)").
std::string joined_labels(const std::vector<std::string>& labels, std::size_t shown);

// The label of a mark (a vertical line at `x` through a plot) in a row above the plot: right of
// its line, or left of it (`anchor_end`) where the right has no room.
struct RowLabel {
  double x = 0;
  std::string text;
  std::optional<std::size_t> row;  // 0 nearest the plot; none: no room, the line only
  double left = 0;                 // the label's extent across, once placed
  double right = 0;
  bool anchor_end = false;
};

struct LabelRows {
  double min_x = 0;  // the room across (the canvas less its margins)
  double max_x = 0;
  std::size_t max_rows = 6;
  double char_width = kSansCharWidth;
};

// Sorts `labels` by x and places each in the lowest row where it overlaps no label (8 px
// apart), its line (from its row down to the plot) crosses no label in a row below, and no
// line of a label in its row or above runs through it. Labels are taken right to left (a
// cluster climbs leftwards, each line passing left of the labels below it) and then left to
// right (a cluster at the right edge, its labels left of their lines, climbs rightwards); the
// order that labels more, in fewer rows, is kept. Returns the rows used.
std::size_t place_row_labels(std::vector<RowLabel>& labels, const LabelRows& rows);

}  // namespace gpuclean::output
