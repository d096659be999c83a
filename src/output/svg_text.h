// What the SVG renderers share (output/run_plot.h, output/history_plot.h): untrusted text made
// safe for XML, round axis steps, and the colours of the per-GPU lines.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace gpuclean::output {

// One colour per GPU line, in GPU order (wrapping after eight).
inline constexpr std::array<const char*, 8> kSeriesColours = {
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

// `text` as XML character data or an attribute value: escape_terminal's printable UTF-8 (no
// control or bidirectional character reaches the viewer), then XML's five specials escaped.
std::string xml_text(std::string_view text);

// A "nice" axis step (1, 2 or 5 × 10^k) giving about `ticks` ticks up to `span`.
double nice_step(double span, int ticks);

}  // namespace gpuclean::output
