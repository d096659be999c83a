#include "output/run_plot.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/units.h"
#include "output/escape.h"
#include "output/svg_text.h"

namespace gpuclean::output {
namespace {

constexpr double kWidth = 900;
constexpr double kHeight = 420;
constexpr double kLeft = 70;
constexpr double kRight = 20;
constexpr double kTop = 50;
constexpr double kBottom = 70;

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

}  // namespace

namespace {

// The plot's scales: seconds across, GiB up, from the record's samples and peaks.
struct Scales {
  double t_max = 1;
  double y_gib = 1;
  double plot_w = kWidth - kLeft - kRight;
  double plot_h = kHeight - kTop - kBottom;
  [[nodiscard]] double x_of(double t) const {
    return kLeft + plot_w * std::clamp(t / t_max, 0.0, 1.0);
  }
  [[nodiscard]] double y_of(double bytes) const {
    return kTop + plot_h * (1 - std::clamp(bytes / static_cast<double>(kGiB) / y_gib, 0.0, 1.0));
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

// The SVG's opening, the title and the line under it (escaped here).
std::string heading(const std::string& title, const std::string& subtitle) {
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kWidth, kHeight);
  svg += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                     kLeft, xml_text(title));
  svg +=
      fmt::format("<text x=\"{}\" y=\"38\" fill=\"#555\">{}</text>\n", kLeft, xml_text(subtitle));
  return svg;
}

// A run's title (the command) and line (mode, exit code, leftovers).
std::string run_heading(const RunRecord& record) {
  std::string title = "gpuclean run";
  if (!record.command.empty()) title += ": " + display_command(record.command, 90);
  return heading(title,
                 fmt::format("mode {}, exit code {}, {} left-behind process{}",
                             record.mode.empty() ? "?" : record.mode, record.exit_code,
                             record.leftovers.size(), record.leftovers.size() == 1 ? "" : "es"));
}

// Axes with ticks: seconds across, GiB up.
std::string axes(const Scales& sc) {
  std::string svg = fmt::format(
      "<g stroke=\"#333\"><line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>"
      "<line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\"/></g>\n",
      kLeft, kTop + sc.plot_h, kLeft + sc.plot_w, kTop);
  const double t_step = nice_step(sc.t_max, 8);
  for (int i = 0; i * t_step <= sc.t_max + 1e-9; ++i) {
    const double t = i * t_step;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:g}</text>\n",
                       sc.x_of(t), kTop + sc.plot_h + 16, t);
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">seconds</text>\n",
                     kLeft + sc.plot_w / 2, kTop + sc.plot_h + 34);
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
      "<text x=\"16\" y=\"{:.1f}\" transform=\"rotate(-90 16 {:.1f})\" text-anchor=\"middle\">"
      "GPU memory used (GiB)</text>\n",
      kTop + sc.plot_h / 2, kTop + sc.plot_h / 2);
  return svg;
}

// Events: where the workload ended and the teardown ran. Events a few pixels apart share one
// line and one label ("exit, teardown"), so the labels stay readable.
std::string event_marks(const RunRecord& record, const Scales& sc) {
  std::vector<std::pair<double, std::string>> marks;
  for (const RunEvent& e : record.events) {
    if (!is_marked(e)) continue;
    const double x = sc.x_of(e.t);
    const std::string label =
        e.kind == RunEventKind::kNote ? e.detail : std::string(to_string(e.kind));
    if (!marks.empty() && x - marks.back().first < 12) {
      marks.back().second += ", " + label;
    } else {
      marks.emplace_back(x, label);
    }
  }
  std::string svg;
  for (const auto& [x, label] : marks) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#888\" "
        "stroke-dasharray=\"4 3\"/><text x=\"{3:.1f}\" y=\"{4}\" fill=\"#555\" "
        "transform=\"rotate(-90 {3:.1f} {4})\" text-anchor=\"end\">{5}</text>\n",
        x, kTop, kTop + sc.plot_h, x - 3, kTop + 4, xml_text(label));
  }
  return svg;
}

// The processes left behind: one marker where they were found, red while any still runs.
std::string leftover_mark(const RunRecord& record, const Scales& sc) {
  if (record.leftovers.empty()) return "";
  std::size_t remaining = 0;
  for (const RunLeftover& l : record.leftovers) {
    remaining += l.outcome == LeftoverOutcome::kRemaining;
  }
  const double x = sc.x_of(record.leftovers.front().t);
  const std::string label =
      remaining > 0
          ? fmt::format("{} left behind, {} STILL RUNNING", record.leftovers.size(), remaining)
          : fmt::format("{} left behind, all ended", record.leftovers.size());
  // Right of the marker, or left of it near the right edge.
  const bool left = x > kLeft + sc.plot_w * 0.6;
  return fmt::format(
      "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/>"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\" text-anchor=\"{}\">{}</text>\n",
      x, kTop + sc.plot_h - 8, remaining > 0 ? "#d62728" : "#333", left ? x - 8 : x + 8,
      kTop + sc.plot_h - 4, remaining > 0 ? "#d62728" : "#333", left ? "end" : "start",
      xml_text(label));
}

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

// One line per GPU, the pre-run level dotted in the same colour; a legend under the axis; a
// note when no GPU has a sample.
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
    const RunGpu& gpu = record.gpus[g];
    if (gpu.baseline) {
      const double y = sc.y_of(static_cast<double>(*gpu.baseline));
      svg += fmt::format(
          "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\" "
          "stroke-dasharray=\"1 3\"/>\n",
          kLeft, y, kLeft + sc.plot_w, y, colour);
    }
    std::string legend = fmt::format("GPU {} {}", gpu.index, gpu.name);
    if (gpu.peak) legend += ", peak " + format_bytes(*gpu.peak);
    if (gpu.back) legend += *gpu.back ? ", back to pre-run level" : ", NOT back";
    // Two legend entries per row, rows upwards from the bottom edge.
    const double lx = kLeft + static_cast<double>(g % 2) * sc.plot_w / 2;
    const std::size_t row = g / 2;
    const double ly = kHeight - 10 - static_cast<double>(row) * 14;
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"4\" fill=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
        lx, ly - 4, colour, lx + 16, ly, xml_text(legend));
  }
  if (!any_data) {
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#888\">"
        "no GPU memory samples in this record (NVML absent or --no-nvml)</text>\n",
        kLeft + sc.plot_w / 2, kTop + sc.plot_h / 2);
  }
  return svg;
}

}  // namespace

std::string render_run_svg(const RunRecord& record) {
  const Scales scales = scales_of(record);
  return run_heading(record) + axes(scales) + event_marks(record, scales) +
         leftover_mark(record, scales) + gpu_lines(record, scales) + "</svg>\n";
}

}  // namespace gpuclean::output
