#include "output/run_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/units.h"
#include "output/escape.h"
#include "output/svg_text.h"

namespace gpuclean::output {
namespace {

// Across: the GiB axis's labels, the plot, a margin. The title, subtitle and legend use the
// whole width less kMargin each side.
constexpr double kWidth = 900;
constexpr double kLeft = 70;
constexpr double kRight = 20;
constexpr double kMargin = 10;
// Down: the title and subtitle, the marks' label rows, the plot, its time axis, the legend's
// rows (as many as its entries need), a note on marks left unlabelled.
constexpr double kHeaderHeight = 50;
constexpr double kMarkRowHeight = 14;
constexpr std::size_t kMaxMarkRows = 6;
constexpr double kPlotHeight = 300;
constexpr double kLegendRowHeight = 16;
// Events closer than this share a line and a label ("exit, teardown").
constexpr double kMergePixels = 12;
// A mark's label is cut to this many characters: it then fits on one side of any line.
constexpr std::size_t kMaxLabelChars = 60;
// The full command in the title's tooltip, up to this many characters.
constexpr std::size_t kMaxTooltipChars = 4000;
// A white outline under a text's letters: readable over a line.
constexpr const char* kHalo = R"(stroke="white" stroke-width="3" paint-order="stroke")";

bool is_marked(const RunEvent& e) {
  switch (e.kind) {
    case RunEventKind::kExit:
    case RunEventKind::kTimeout:
    case RunEventKind::kInterrupt:
    case RunEventKind::kTeardown:
    case RunEventKind::kTeardownDone:
    case RunEventKind::kNote:
      return true;
    default:
      return false;
  }
}

// The plot's scales: seconds across, GiB up, from the record's samples and peaks; `top` is
// known once the marks' label rows are.
struct Scales {
  double t_max = 1;
  double y_gib = 1;
  double top = kHeaderHeight;
  double plot_w = kWidth - kLeft - kRight;
  double plot_h = kPlotHeight;
  [[nodiscard]] double bottom() const { return top + plot_h; }
  [[nodiscard]] double x_of(double t) const {
    return kLeft + plot_w * std::clamp(t / t_max, 0.0, 1.0);
  }
  [[nodiscard]] double y_of(double bytes) const {
    return top + plot_h * (1 - std::clamp(bytes / static_cast<double>(kGiB) / y_gib, 0.0, 1.0));
  }
};

Scales scales_of(const RunRecord& record) {
  Scales scales;
  double t_max = record.duration;
  double y_max = 0;
  for (const RunSample& s : record.samples) {
    t_max = std::max(t_max, s.t);
    for (const auto& used : s.used) {
      if (used) y_max = std::max(y_max, static_cast<double>(*used));
    }
  }
  for (const RunGpu& gpu : record.gpus) {
    if (gpu.peak) y_max = std::max(y_max, static_cast<double>(*gpu.peak));
  }
  scales.t_max = t_max <= 0 ? 1 : t_max;
  scales.y_gib = std::max(y_max / static_cast<double>(kGiB), 1.0) * 1.1;
  return scales;
}

// How many characters of `char_width` fit across `width`.
std::size_t chars_in(double width, double char_width) {
  return static_cast<std::size_t>(std::max(1.0, std::floor(width / char_width)));
}

// The one name all GPUs share ("NVIDIA H200"), said once in the subtitle; empty where they
// differ (each legend entry then names its GPU).
std::string shared_name(const RunRecord& record) {
  if (record.gpus.empty()) return "";
  for (const RunGpu& gpu : record.gpus) {
    if (gpu.name != record.gpus.front().name) return "";
  }
  return record.gpus.front().name;
}

// --- The heading -----------------------------------------------------------------------------

// The command as a user could paste it, each argument a shell word.
std::string command_line(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) {
    if (!text.empty()) text += ' ';
    text += shell_word(arg);
  }
  return text;
}

// The title (the command, cut with "…" to the width; the whole of it in a tooltip), and the
// line under it: mode, exit code, leftovers, the GPUs' model when they share one.
std::string heading(const RunRecord& record) {
  std::string title = "gpuclean run";
  if (!record.command.empty()) title += ": " + command_line(record.command);
  const double room = kWidth - 2 * kMargin;
  std::string svg = fmt::format(
      "<text class=\"title\" x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">"
      "<title>{}</title>{}</text>\n",
      kMargin, xml_text(cut_for_display(title, kMaxTooltipChars)),
      xml_text(cut_for_display(title, chars_in(room, kTitleCharWidth))));
  std::string subtitle = fmt::format(
      "mode {}, exit code {}, {} left-behind process{}", record.mode.empty() ? "?" : record.mode,
      record.exit_code, record.leftovers.size(), record.leftovers.size() == 1 ? "" : "es");
  if (const std::string name = shared_name(record); !name.empty()) {
    subtitle += record.gpus.size() == 1 ? fmt::format("; {}", name)
                                        : fmt::format("; {} \u00d7 {}", record.gpus.size(), name);
  }
  svg += fmt::format("<text class=\"subtitle\" x=\"{}\" y=\"38\" fill=\"#555\">{}</text>\n",
                     kMargin, xml_text(cut_for_display(subtitle, chars_in(room, kTextCharWidth))));
  return svg;
}

// --- The axes --------------------------------------------------------------------------------

// Axes with ticks: seconds across, GiB up.
std::string axes(const Scales& sc) {
  std::string svg = fmt::format(
      "<g stroke=\"#333\"><line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>"
      "<line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\"/></g>\n",
      kLeft, sc.bottom(), kLeft + sc.plot_w, sc.top);
  const double t_step = nice_step(sc.t_max, 8);
  for (int i = 0; i * t_step <= sc.t_max + 1e-9; ++i) {
    const double t = i * t_step;
    svg += fmt::format(
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:g}</text>\n",
        sc.x_of(t), sc.bottom() + 16, t);
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">seconds</text>\n",
                     kLeft + sc.plot_w / 2, sc.bottom() + 34);
  const double y_step = nice_step(sc.y_gib, 6);
  for (int i = 0; i * y_step <= sc.y_gib + 1e-9; ++i) {
    const double g = i * y_step;
    const double y = sc.y_of(g * static_cast<double>(kGiB));
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        kLeft, y, kLeft + sc.plot_w, kLeft - 6, y + 4, g);
  }
  svg += fmt::format(
      "<text x=\"16\" y=\"{0:.1f}\" transform=\"rotate(-90 16 {0:.1f})\" text-anchor=\"middle\">"
      "GPU memory used (GiB)</text>\n",
      sc.top + sc.plot_h / 2);
  return svg;
}

// --- Marks: where the workload ended, the teardown ran, leftovers were found -----------------

struct Mark {
  RowLabel label;                   // the whole text, placed in the rows above the plot
  std::vector<std::string> events;  // "exit", "teardown"
  std::string leftovers;            // "4 left behind, all ended"; empty: none found here
  bool still_running = false;       // a leftover found here still runs (drawn red)
};

std::string leftovers_text(const RunRecord& record, bool& still_running) {
  std::size_t remaining = 0;
  for (const RunLeftover& l : record.leftovers) {
    remaining += l.outcome == LeftoverOutcome::kRemaining;
  }
  still_running = remaining > 0;
  return remaining > 0
             ? fmt::format("{} left behind, {} STILL RUNNING", record.leftovers.size(), remaining)
             : fmt::format("{} left behind, all ended", record.leftovers.size());
}

// The marked events, those a few pixels apart on one mark; the leftovers on the mark at their
// time, or a mark of their own.
std::vector<Mark> marks_of(const RunRecord& record, const Scales& sc) {
  std::vector<std::pair<double, std::string>> found;
  for (const RunEvent& e : record.events) {
    if (!is_marked(e)) continue;
    found.emplace_back(sc.x_of(e.t),
                       e.kind == RunEventKind::kNote ? e.detail : std::string(to_string(e.kind)));
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Mark> marks;
  for (auto& [x, label] : found) {
    if (marks.empty() || x - marks.back().label.x >= kMergePixels) {
      marks.emplace_back();
      marks.back().label.x = x;
    }
    marks.back().events.push_back(std::move(label));
  }
  if (!record.leftovers.empty()) {
    const double x = sc.x_of(record.leftovers.front().t);
    auto near = std::find_if(marks.begin(), marks.end(),
                             [&](const Mark& m) { return std::abs(m.label.x - x) < kMergePixels; });
    if (near == marks.end()) {
      near = marks.emplace(
          std::find_if(marks.begin(), marks.end(), [&](const Mark& m) { return m.label.x > x; }));
      near->label.x = x;
    }
    near->leftovers = leftovers_text(record, near->still_running);
  }
  for (Mark& m : marks) {
    std::string text = joined_labels(m.events, 3);
    if (!m.leftovers.empty()) text += (text.empty() ? "" : ", ") + m.leftovers;
    m.label.text = cut_for_display(text, kMaxLabelChars);
  }
  return marks;
}

// The marks' labels placed in rows above the plot (svg_text.h); returns the rows used.
std::size_t place_marks(std::vector<Mark>& marks) {
  std::vector<RowLabel> labels;
  labels.reserve(marks.size());
  for (const Mark& m : marks) labels.push_back(m.label);
  const std::size_t rows =
      place_row_labels(labels, LabelRows{kMargin, kWidth - kMargin, kMaxMarkRows, kSansCharWidth});
  // place_row_labels keeps the order by x, which marks_of's already is.
  for (std::size_t i = 0; i < marks.size(); ++i) marks[i].label = labels[i];
  return rows;
}

// A mark's label: the events, then the leftovers (red and bold while one still runs).
std::string label_text(const Mark& m) {
  const std::string& shown = m.label.text;
  if (!m.still_running || shown.size() < m.leftovers.size() ||
      shown.compare(shown.size() - m.leftovers.size(), m.leftovers.size(), m.leftovers) != 0) {
    return xml_text(shown);
  }
  return fmt::format("{}<tspan fill=\"#d62728\" font-weight=\"bold\">{}</tspan>",
                     xml_text(shown.substr(0, shown.size() - m.leftovers.size())),
                     xml_text(m.leftovers));
}

// Each mark's dashed line from its label down through the plot, its label, and where leftovers
// were found, a dot on the time axis (red while one still runs).
std::string mark_lines(const std::vector<Mark>& marks, const Scales& sc) {
  std::string svg;
  for (const Mark& m : marks) {
    const RowLabel& l = m.label;
    const double label_y = sc.top - 6 - static_cast<double>(l.row.value_or(0)) * kMarkRowHeight;
    svg += fmt::format(
        "<line class=\"mark\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
        "stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n",
        l.x, l.row ? label_y - 10 : sc.top, sc.bottom());
    if (!m.leftovers.empty()) {
      svg += fmt::format(
          "<circle class=\"leftover-mark\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/>\n",
          l.x, sc.bottom(), m.still_running ? "#d62728" : "#333");
    }
    if (!l.row) continue;
    svg += fmt::format(
        "<text class=\"mark-label\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#333\" "
        "text-anchor=\"{}\">{}</text>\n",
        l.anchor_end ? l.x - 3 : l.x + 3, label_y, l.anchor_end ? "end" : "start", label_text(m));
  }
  return svg;
}

// --- Memory per GPU, and the legend ----------------------------------------------------------

// GPU `g`'s samples as steps, not slopes (a sample holds until the next one is taken); empty
// when it has none.
std::string gpu_steps(const RunRecord& record, std::size_t g, const Scales& sc) {
  std::string points;
  std::optional<double> last_y;
  for (const RunSample& sample : record.samples) {
    if (g >= sample.used.size() || !sample.used[g]) continue;
    const double x = sc.x_of(sample.t);
    const double y = sc.y_of(static_cast<double>(*sample.used[g]));
    if (last_y) points += fmt::format("{:.1f},{:.1f} ", x, *last_y);
    points += fmt::format("{:.1f},{:.1f} ", x, y);
    last_y = y;
  }
  return points;
}

// One line per GPU, the pre-run level dotted in the same colour; a note when no GPU has a
// sample.
std::string gpu_lines(const RunRecord& record, const Scales& sc) {
  std::string svg;
  bool any_data = false;
  for (std::size_t g = 0; g < record.gpus.size(); ++g) {
    const char* colour = kSeriesColours[g % kSeriesColours.size()];
    if (const std::string points = gpu_steps(record, g, sc); !points.empty()) {
      any_data = true;
      svg += fmt::format(
          "<polyline class=\"gpu\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" "
          "points=\"{}\"/>\n",
          colour, points);
    }
    if (const RunGpu& gpu = record.gpus[g]; gpu.baseline) {
      const double y = sc.y_of(static_cast<double>(*gpu.baseline));
      svg += fmt::format(
          "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\" "
          "stroke-dasharray=\"1 3\"/>\n",
          kLeft, y, kLeft + sc.plot_w, y, colour);
    }
  }
  if (!any_data) {
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#888\" {}>"
        "no GPU memory samples in this record (NVML absent or --no-nvml)</text>\n",
        kLeft + sc.plot_w / 2, sc.top + sc.plot_h / 2, kHalo);
  }
  return svg;
}

// "GPU 0, peak 76.2 GiB, back to pre-run level" (the GPU's name too where they differ), cut to
// the legend's width.
std::string legend_label(const RunGpu& gpu, bool name_in_subtitle) {
  std::string text = name_in_subtitle || gpu.name.empty()
                         ? fmt::format("GPU {}", gpu.index)
                         : fmt::format("GPU {} {}", gpu.index, gpu.name);
  if (gpu.peak) text += ", peak " + format_bytes(*gpu.peak);
  if (gpu.back) text += *gpu.back ? ", back to pre-run level" : ", NOT back";
  return cut_for_display(text, chars_in(kWidth - kMargin - kLeft - 16, kTextCharWidth));
}

// The legend under the time axis, its entries left to right in rows that fit the width;
// returns the height used.
double legend(std::string& svg, const RunRecord& record, double top) {
  const bool name_in_subtitle = !shared_name(record).empty();
  double x = kLeft;
  double y = top + 12;
  for (std::size_t g = 0; g < record.gpus.size(); ++g) {
    const std::string label = legend_label(record.gpus[g], name_in_subtitle);
    const double width = 16 + text_width(label, kTextCharWidth);
    if (x > kLeft && x + width > kWidth - kMargin) {
      x = kLeft;
      y += kLegendRowHeight;
    }
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"4\" fill=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
        x, y - 4, kSeriesColours[g % kSeriesColours.size()], x + 16, y, xml_text(label));
    x += width + 20;
  }
  return record.gpus.empty() ? 0 : y - top + 4;
}

}  // namespace

std::string render_run_svg(const RunRecord& record) {
  Scales scales = scales_of(record);
  std::vector<Mark> marks = marks_of(record, scales);
  const std::size_t rows = place_marks(marks);
  scales.top =
      kHeaderHeight + static_cast<double>(std::max<std::size_t>(rows, 1)) * kMarkRowHeight + 8;
  std::string body = axes(scales) + mark_lines(marks, scales) + gpu_lines(record, scales);
  double bottom = scales.bottom() + 40;
  bottom += legend(body, record, bottom);
  const auto unlabelled = static_cast<std::size_t>(
      std::count_if(marks.begin(), marks.end(), [](const Mark& m) { return !m.label.row; }));
  if (unlabelled > 0) {
    body += fmt::format(
        "<text x=\"{}\" y=\"{:.1f}\" fill=\"#555\">{} mark{} too close to others to label: "
        "the record's events list them</text>\n",
        kLeft, bottom + 16, unlabelled, unlabelled == 1 ? "" : "s");
    bottom += 20;
  }
  const double height = std::ceil(bottom + 10);
  return fmt::format(
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
             "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
             "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
             kWidth, height) +
         heading(record) + body + "</svg>\n";
}

}  // namespace gpuclean::output
