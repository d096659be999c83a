// plot's picture of a run record (output/run_plot.h) with real data: the legend of eight GPUs in
// rows within the canvas, the marks' labels above the plot and apart, a long command cut to the
// width. The first three failed on the renderer of commit f9d1cde (said at each).
#include "output/run_plot.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "core/units.h"

namespace gpuclean::output {
namespace {

// Text widths as the renderer estimates them (output/svg_text.h), by font size: 11 px 6.4 a
// character, 12 px 7, 14 px bold 9.
double char_width(double font_size) {
  if (font_size <= 11) return 6.4;
  if (font_size <= 12) return 7.0;
  return 9.0;
}

// Characters as shown: UTF-8 sequences, an XML entity one character.
std::size_t shown_chars(const std::string& xml) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < xml.size(); ++i) {
    if (xml[i] == '&') {
      i = xml.find(';', i);
    } else if ((static_cast<unsigned char>(xml[i]) & 0xC0) == 0x80) {
      continue;
    }
    ++n;
  }
  return n;
}

struct Box {
  double left = 0;
  double right = 0;
  double top = 0;
  double bottom = 0;
  std::string text;
};

bool overlap(const Box& a, const Box& b) {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}

double attribute(const std::string& attributes, const std::string& name, double otherwise) {
  std::smatch m;
  if (!std::regex_search(attributes, m, std::regex(" " + name + "=\"(-?[0-9.]+)\""))) {
    return otherwise;
  }
  return std::stod(m[1].str());
}

// Every <text>'s box, as estimated (what a tooltip's <title> says is not shown; a text turned
// by rotate(-90) stands upright from its point).
std::vector<Box> text_boxes(const std::string& svg) {
  std::vector<Box> boxes;
  const std::regex re("<text([^>]*)>(.*?)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    const std::string attributes = (*it)[1].str();
    const std::string shown =
        std::regex_replace(std::regex_replace((*it)[2].str(), std::regex("<title>.*?</title>"), ""),
                           std::regex("<[^>]*>"), "");
    const double x = attribute(attributes, "x", 0);
    const double y = attribute(attributes, "y", 0);
    const double size = attribute(attributes, "font-size", 12);
    const double width = static_cast<double>(shown_chars(shown)) * char_width(size);
    const bool end = attributes.find("text-anchor=\"end\"") != std::string::npos;
    const bool middle = attributes.find("text-anchor=\"middle\"") != std::string::npos;
    const double from = end ? -width : middle ? -width / 2 : 0;  // along the text
    Box box{x + from, x + from + width, y - 0.8 * size, y + 0.2 * size, shown};
    if (attributes.find("rotate(-90") != std::string::npos) {
      box = Box{x - 0.8 * size, x + 0.2 * size, y - from - width, y - from, shown};
    }
    boxes.push_back(box);
  }
  return boxes;
}

double canvas_width(const std::string& svg) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(svg, m, std::regex("<svg [^>]*width=\"([0-9.]+)\"")));
  return m.empty() ? 0 : std::stod(m[1].str());
}

// The plot's area, from its axes.
Box plot_area(const std::string& svg) {
  std::smatch m;
  const bool found = std::regex_search(
      svg, m,
      std::regex("<g stroke=\"#333\"><line x1=\"([0-9.]+)\" y1=\"([0-9.]+)\" x2=\"([0-9.]+)\" "
                 "y2=\"[0-9.]+\"/><line x1=\"[0-9.]+\" y1=\"([0-9.]+)\""));
  EXPECT_TRUE(found) << svg;
  if (!found) return {};
  return {std::stod(m[1].str()), std::stod(m[3].str()), std::stod(m[4].str()),
          std::stod(m[2].str()), "plot"};
}

// An 8-GPU run as an H200 node records one: a tensor-parallel server up to 76 GiB a GPU, SIGKILLed,
// its workers ended at teardown.
RunRecord eight_gpus(const std::string& name) {
  RunRecord r;
  r.command = {"python3", "-m", "vllm.entrypoints.openai.api_server", "--tensor-parallel-size",
               "8"};
  r.mode = "cgroup";
  r.exit_code = 137;
  r.duration = 95.3;
  for (unsigned g = 0; g < 8; ++g) {
    const Bytes peak = static_cast<Bytes>((76.2 - 0.4 * g) * static_cast<double>(kGiB));
    r.gpus.push_back({g, name, "GPU-" + std::to_string(g), 150 * kGiB, 0, peak, 0, g != 5, ""});
  }
  for (double t = 0; t <= 95; t += 2.5) {
    RunSample sample{t, {}};
    for (const RunGpu& gpu : r.gpus) {
      sample.used.emplace_back(t < 20 ? 0 : t < 93 ? *gpu.peak : gpu.index == 5 ? kGiB : 0);
    }
    r.samples.push_back(sample);
  }
  r.events = {{0, RunEventKind::kStart, ""},
              {92.61, RunEventKind::kExit, ""},
              {92.62, RunEventKind::kTeardown, ""},
              {95.2, RunEventKind::kTeardownDone, "8 found, 1 remaining"}};
  RunLeftover worker;
  worker.pid = 5000;
  worker.comm = "python3";
  worker.t = 92.62;
  worker.outcome = LeftoverOutcome::kGone;
  for (Pid pid = 5000; pid < 5008; ++pid) {
    r.leftovers.push_back(worker);
    r.leftovers.back().pid = pid;
  }
  r.leftovers.back().outcome = LeftoverOutcome::kRemaining;
  return r;
}

// f9d1cde put two legend entries a row, rows climbing from the bottom edge into the time
// axis's labels ("seconds" and the ticks under the fourth row); with "NVIDIA H200 NVL" the
// second column ran past the canvas.
TEST(RunPlotTest, TheLegendOfEightGpusFitsTheCanvasInRowsOfItsOwn) {
  for (const char* name : {"NVIDIA H200", "NVIDIA H200 NVL"}) {
    SCOPED_TRACE(name);
    const std::string svg = render_run_svg(eight_gpus(name));
    const double width = canvas_width(svg);
    const std::vector<Box> texts = text_boxes(svg);
    const std::regex re(
        "<rect x=\"([0-9.]+)\" y=\"[0-9.]+\" width=\"12\" height=\"4\" fill=\"[^\"]+\"/>"
        "<text x=\"([0-9.]+)\" y=\"([0-9.]+)\">([^<]*)</text>");
    std::vector<Box> entries;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
         ++it) {
      const double text_x = std::stod((*it)[2].str());
      const double y = std::stod((*it)[3].str());
      const std::string label = (*it)[4].str();
      entries.push_back({std::stod((*it)[1].str()),
                         text_x + static_cast<double>(shown_chars(label)) * 7.0, y - 9.6, y + 2.4,
                         label});
    }
    ASSERT_EQ(entries.size(), 8u) << svg;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      EXPECT_LE(entries[i].right, width) << entries[i].text;
      for (std::size_t j = i + 1; j < entries.size(); ++j) {
        EXPECT_FALSE(overlap(entries[i], entries[j]))
            << entries[i].text << " and " << entries[j].text;
      }
      for (const Box& other : texts) {
        if (other.text == entries[i].text) continue;
        EXPECT_FALSE(overlap(entries[i], other)) << entries[i].text << " and " << other.text;
      }
    }
  }
}

// f9d1cde turned the marks' labels upright inside the plot, over the lines ("exit, teardown"
// down from the top), and wrote the leftovers' line inside it too, on the lines at 0.
TEST(RunPlotTest, MarkLabelsSitInRowsAboveThePlotApartFromEachOtherAndTheLines) {
  RunRecord r = eight_gpus("NVIDIA H200");
  // The teardown's end at the right edge, a note 20 pixels before the exit.
  r.events.push_back({90.0, RunEventKind::kNote, "NVML slow to answer"});
  r.events.push_back({95.3, RunEventKind::kInterrupt, ""});
  const std::string svg = render_run_svg(r);
  const Box plot = plot_area(svg);
  std::vector<Box> labels;
  for (const Box& box : text_boxes(svg)) {
    for (const char* word : {"exit", "teardown", "left behind", "NVML slow", "interrupt"}) {
      if (box.text.find(word) != std::string::npos) {
        labels.push_back(box);
        break;
      }
    }
  }
  ASSERT_GE(labels.size(), 3u) << svg;
  // Every mark labelled, and the leftovers named with the events at their time.
  EXPECT_EQ(svg.find("too close to others"), std::string::npos);
  EXPECT_TRUE(std::any_of(labels.begin(), labels.end(), [](const Box& b) {
    return b.text == "exit, teardown, 8 left behind, 1 STILL RUNNING";
  })) << svg;
  const std::regex line_re(
      "<line (?:class=\"mark\" )?x1=\"([0-9.]+)\" y1=\"([0-9.]+)\" x2=\"[0-9.]+\" "
      "y2=\"([0-9.]+)\" stroke=\"#888\"");
  for (std::size_t i = 0; i < labels.size(); ++i) {
    EXPECT_FALSE(overlap(labels[i], plot)) << labels[i].text << " is on the plot";
    for (std::size_t j = i + 1; j < labels.size(); ++j) {
      EXPECT_FALSE(overlap(labels[i], labels[j])) << labels[i].text << " and " << labels[j].text;
    }
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line_re);
         it != std::sregex_iterator(); ++it) {
      const Box line{std::stod((*it)[1].str()), std::stod((*it)[1].str()),
                     std::stod((*it)[2].str()), std::stod((*it)[3].str()), "line"};
      const bool across = line.left > labels[i].left && line.left < labels[i].right;
      EXPECT_FALSE(across && line.top < labels[i].bottom && labels[i].top < line.bottom)
          << labels[i].text << " is crossed by the line at x " << line.left;
    }
  }
}

// f9d1cde cut the command at 90 bytes after "gpuclean run: ", 105 characters of 14 px bold
// from x 70: past the 900 px canvas.
TEST(RunPlotTest, ALongCommandIsCutToTheWidthWithTheWholeOfItInATooltip) {
  RunRecord r = eight_gpus("NVIDIA H200");
  r.command = {"python3", "train.py"};
  std::string command = "python3 train.py";
  while (command.size() < 500) {
    const std::string arg = "--option-" + std::to_string(r.command.size()) + "=value";
    r.command.push_back(arg);
    command += " " + arg;
  }
  const std::string svg = render_run_svg(r);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      svg, m,
      std::regex("<text (?:class=\"title\" )?x=\"([0-9.]+)\" y=\"20\" font-size=\"14\" "
                 "font-weight=\"bold\">(?:<title>([^<]*)</title>)?([^<]*)</text>")))
      << svg;
  const std::string shown = m[3].str();
  EXPECT_EQ(shown.rfind("gpuclean run: python3 train.py --option-2=value", 0), 0u) << shown;
  EXPECT_LE(std::stod(m[1].str()) + static_cast<double>(shown_chars(shown)) * 9.0,
            canvas_width(svg))
      << shown;
  ASSERT_GE(shown.size(), 3u);
  EXPECT_EQ(shown.substr(shown.size() - 3), "…");
  EXPECT_EQ(m[2].str(), "gpuclean run: " + command);
}

// An ordinary record's picture stays compact: the GPUs' model named once, a legend of two GPUs
// in one row, the canvas 420 px as before plus the marks' label rows (two here: the
// teardown's end at the right edge climbs above the exit's label).
TEST(RunPlotTest, AnOrdinaryRecordNamesItsGpusOnceAndStaysCompact) {
  RunRecord r = eight_gpus("NVIDIA H200");
  r.gpus.resize(2);
  for (RunSample& s : r.samples) s.used.resize(2);
  const std::string svg = render_run_svg(r);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("<svg [^>]*height=\"([0-9.]+)\"")));
  EXPECT_LE(std::stod(m[1].str()), 420 + 2 * 14 + 8);
  EXPECT_NE(svg.find(">mode cgroup, exit code 137, 8 left-behind processes; 2 \u00d7 NVIDIA H200<"),
            std::string::npos);
  const auto rows = [&](const std::string& label) {
    std::smatch row;
    EXPECT_TRUE(std::regex_search(svg, row,
                                  std::regex("<text x=\"[0-9.]+\" y=\"([0-9.]+)\">" + label + "<")))
        << label;
    return row.empty() ? "" : row[1].str();
  };
  EXPECT_EQ(rows("GPU 0, peak 76.2 GiB, back to pre-run level"),
            rows("GPU 1, peak 75.8 GiB, back to pre-run level"));
}

}  // namespace
}  // namespace gpuclean::output
