// What the SVG renderers share (output/run_plot.h, output/history_plot.h): untrusted text made
// safe for XML, round axis steps, the colours of the per-GPU lines, estimated text widths, and
// the rows of labels above a plot that keep the labels off the data and off each other.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuclean::output {

// One colour per GPU line, in GPU order (wrapping after eight).
inline constexpr std::array<const char*, 8> kSeriesColours = {
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

// `text` as XML character data or an attribute value: escape_terminal's printable UTF-8 (no
// control or bidirectional character reaches the viewer), then XML's five specials escaped.
std::string xml_text(std::string_view text);

// A "nice" axis step (1, 2 or 5 × 10^k) giving about `ticks` ticks up to `span`.
double nice_step(double span, int ticks);

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
