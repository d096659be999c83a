// plot --history's picture (output/history_plot.h): clock time across, gaps where nothing was
// recorded, a lane per holder with its leftover time marked, the marks' labels apart.
#include "output/history_plot.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "core/units.h"
#include "svg_reading.h"

namespace gpuclean::output {
namespace {

using testing::all;
using testing::count;
using testing::tick_x;
using testing::xml_error;

constexpr double kDay = 1796428800;  // 2026-12-05 00:00:00 UTC

double at(int hour, int minute, int second = 0) {
  return kDay + hour * 3600 + minute * 60 + second;
}

RecordedProcess process(Pid pid, std::vector<std::string> argv) {
  RecordedProcess p;
  p.boot_id = "boot";
  p.pid = pid;
  p.start_ticks = static_cast<std::uint64_t>(pid) * 10;
  p.user = "alice";
  p.argv = std::move(argv);
  return p;
}

HistoryEvent event(HistoryEventKind kind, double time) {
  HistoryEvent e;
  e.kind = kind;
  e.time = time;
  return e;
}

HistoryEvent holder_event(HistoryEventKind kind, double time, const RecordedProcess& p,
                          const std::string& klass = "", std::optional<Bytes> bytes = {}) {
  HistoryEvent e = event(kind, time);
  e.process = p;
  e.klass = klass;
  e.bytes = bytes;
  return e;
}

HistoryEvent memory(double time, const RecordedProcess& p, unsigned gpu, Bytes bytes) {
  HistoryEvent e = holder_event(HistoryEventKind::kMemoryChanged, time, p);
  e.gpu = gpu;
  e.bytes = bytes;
  return e;
}

const RecordedProcess kServer = process(4242, {"python3", "serve.py", "--port", "8000"});
const RecordedProcess kWorker = process(4250, {"python3", "-m", "worker"});

// The brief's night: a server on GPU 0 from 10:00 with 8 GiB forks a worker (10:01, 4 GiB);
// the server dies at 10:05 and the worker becomes an orphan; a kill at 10:20 ends it (10:21).
// Recording began at 09:58; the recorder was stopped from 10:30 to 10:40.
HistoryPlotInput night() {
  HistoryPlotInput in;
  in.since = at(9, 50);
  in.until = at(11, 0);
  in.recording_began = at(9, 58);
  in.title = "gpuclean history: node7";
  in.subtitle = "2026-12-05 09:50:00 to 2026-12-05 11:00:00";
  auto& e = in.events;
  HistoryEvent started = event(HistoryEventKind::kRecorderStarted, at(9, 58));
  started.detail = "process events: on";
  e.push_back(started);
  e.push_back(holder_event(HistoryEventKind::kAppeared, at(10, 0), kServer, "active", 8 * kGiB));
  e.push_back(memory(at(10, 0), kServer, 0, 8 * kGiB));
  RecordedProcess worker = kWorker;
  worker.parent_pid = kServer.pid;
  e.push_back(holder_event(HistoryEventKind::kAppeared, at(10, 1), worker, "active", 4 * kGiB));
  e.push_back(memory(at(10, 1), worker, 0, 4 * kGiB));
  e.push_back(holder_event(HistoryEventKind::kLeft, at(10, 5), kServer, "active", 8 * kGiB));
  HistoryEvent orphaned =
      holder_event(HistoryEventKind::kClassChanged, at(10, 5), worker, "orphan");
  orphaned.detail = "active";
  e.push_back(orphaned);
  HistoryEvent kill = event(HistoryEventKind::kAction, at(10, 20));
  kill.detail = R"({"command":"kill","args":["4250","--yes"],"exit":0,"user":"root"})";
  e.push_back(kill);
  e.push_back(holder_event(HistoryEventKind::kLeft, at(10, 21), worker, "orphan", 4 * kGiB));
  e.push_back(event(HistoryEventKind::kRecorderStopped, at(10, 30)));
  e.push_back(event(HistoryEventKind::kRecorderStarted, at(10, 40)));
  return in;
}

// Time to x, read back from two of the picture's own tick labels.
struct Scale {
  double x0 = 0;  // x of t0
  double t0 = 0;
  double per_second = 0;
  [[nodiscard]] double x_of(double t) const { return x0 + (t - t0) * per_second; }
  [[nodiscard]] double t_of(double x) const { return t0 + (x - x0) / per_second; }
};

Scale scale_of(const std::string& svg) {
  const double x10 = tick_x(svg, "10:00");
  const double x1030 = tick_x(svg, "10:30");
  return {x10, at(10, 0), (x1030 - x10) / 1800};
}

class HistoryPlot : public testing::InUtc {};

TEST_F(HistoryPlot, TheAxisIsClockTime) {
  const std::string svg = render_history_svg(night());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(xml_error(svg), "") << "well-formed, as leftover_cost_plot_test checks its own";
  EXPECT_EQ(all(svg, "<text class=\"tick\"[^>]*>([^<]*)</text>"),
            (std::vector<std::string>{"09:50", "10:00", "10:10", "10:20", "10:30", "10:40", "10:50",
                                      "11:00"}));
  const Scale scale = scale_of(svg);
  EXPECT_NEAR(scale.x_of(at(11, 0)), tick_x(svg, "11:00"), 0.2) << "evenly spaced";
}

TEST_F(HistoryPlot, NothingIsDrawnWhereNothingWasRecorded) {
  const std::string svg = render_history_svg(night());
  const Scale scale = scale_of(svg);
  // The bands: before recording began, and while the recorder was stopped.
  const auto xs = all(svg, "<rect class=\"not-recorded\" x=\"([0-9.]+)\"");
  const auto widths = all(svg,
                          "<rect class=\"not-recorded\" x=\"[0-9.]+\" y=\"[0-9.]+\" "
                          "width=\"([0-9.]+)\"");
  ASSERT_EQ(xs.size(), 2u) << svg;
  ASSERT_EQ(widths.size(), 2u);
  const std::vector<std::pair<double, double>> gaps = {{at(9, 50), at(9, 58)},
                                                       {at(10, 30), at(10, 40)}};
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(scale.t_of(std::stod(xs[i])), gaps[i].first, 10);
    EXPECT_NEAR(scale.t_of(std::stod(xs[i]) + std::stod(widths[i])), gaps[i].second, 10);
  }
  EXPECT_EQ(count(svg, "class=\"gap-label\""), 2u);
  // No point of a memory line inside either gap (a point at its edge is where recording
  // resumed or stopped).
  std::size_t points = 0;
  for (const std::string& line : all(svg, "<polyline class=\"gpu\"[^>]* points=\"([^\"]*)\"")) {
    for (const std::string& x : all(line, "([0-9.]+),[0-9.]+")) {
      const double t = scale.t_of(std::stod(x));
      ++points;
      for (const auto& [from, to] : gaps) {
        EXPECT_FALSE(t > from + 5 && t < to - 5) << "a point at " << t - kDay << " s";
      }
    }
  }
  EXPECT_GE(points, 8u) << "the line is drawn where it was recorded";
  EXPECT_EQ(count(svg, "<polyline class=\"gpu\""), 2u) << "one line before the stop, one after";
}

TEST_F(HistoryPlot, EachHolderHasALaneAndTheOrphanIsMarkedALeftover) {
  const std::string svg = render_history_svg(night());
  const auto lanes = all(svg, "(<g class=\"lane\">[\\s\\S]*?</g>)");
  ASSERT_EQ(lanes.size(), 2u) << svg;
  EXPECT_NE(lanes[0].find(">pid 4242 python3 serve.py --port 8000</text>"), std::string::npos)
      << lanes[0];
  EXPECT_NE(lanes[1].find(">pid 4250 python3 -m worker</text>"), std::string::npos) << lanes[1];
  // The server: active all its life, no leftover.
  EXPECT_EQ(lanes[0].find("leftover"), std::string::npos) << lanes[0];
  EXPECT_NE(lanes[0].find(">8.0 GiB, GPU 0</text>"), std::string::npos) << lanes[0];
  // The worker: active, then an orphan from 10:05, tagged there.
  const Scale scale = scale_of(svg);
  const auto segments = all(lanes[1], "<rect class=\"segment([^\"]*)\"");
  EXPECT_EQ(segments, (std::vector<std::string>{"", " leftover"}));
  const auto leftover_x = all(lanes[1], "<rect class=\"segment leftover\" x=\"([0-9.]+)\"");
  ASSERT_EQ(leftover_x.size(), 1u);
  EXPECT_NEAR(scale.t_of(std::stod(leftover_x[0])), at(10, 5), 10);
  const auto tag_x = all(lanes[1], "<text class=\"leftover-mark\" x=\"([0-9.]+)\"");
  ASSERT_EQ(tag_x.size(), 1u) << lanes[1];
  EXPECT_NEAR(scale.t_of(std::stod(tag_x[0])), at(10, 5), 60) << "where it became one";
  EXPECT_NE(lanes[1].find(">4.0 GiB, GPU 0</text>"), std::string::npos) << lanes[1];
  // The legend names the classes drawn and the leftover hatching.
  EXPECT_NE(svg.find(">active</text>"), std::string::npos);
  EXPECT_NE(svg.find(">orphan</text>"), std::string::npos);
  EXPECT_NE(svg.find(">leftover (the owner is gone)</text>"), std::string::npos);
}

TEST_F(HistoryPlot, TheKillIsMarkedWhereItRan) {
  const std::string svg = render_history_svg(night());
  const Scale scale = scale_of(svg);
  const auto labels =
      all(svg, "<text class=\"mark-label\" x=\"([0-9.]+)\"[^>]*>kill \\(exit 0\\)<");
  ASSERT_EQ(labels.size(), 1u) << svg;
  const auto lines = all(svg, "<g class=\"mark\"[^>]*><line x1=\"([0-9.]+)\"");
  ASSERT_EQ(lines.size(), 1u) << "the first start is where recording began: no restart mark";
  EXPECT_NEAR(scale.t_of(std::stod(lines[0])), at(10, 20), 10);
}

TEST_F(HistoryPlot, ARecorderThatWasKilledIsMarkedNotAGap) {
  HistoryPlotInput in = night();
  in.events.push_back(event(HistoryEventKind::kRecorderStarted, at(10, 50)));
  const std::string svg = render_history_svg(in);
  EXPECT_NE(svg.find(">recorder restarted</text>"), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "<rect class=\"not-recorded\""), 2u);
  // Down at `since`: a gap from the window's start to the recorder's next start.
  in = night();
  in.recording_began = at(8, 0);
  in.events.erase(in.events.begin());  // the 09:58 start, which ends the gap
  in.events.insert(in.events.begin(), event(HistoryEventKind::kRecorderStarted, at(9, 55)));
  in.stopped_at_since = true;
  const std::string down = render_history_svg(in);
  const Scale scale = scale_of(down);
  const auto widths = all(down,
                          "<rect class=\"not-recorded\" x=\"[0-9.]+\" y=\"[0-9.]+\" "
                          "width=\"([0-9.]+)\"");
  ASSERT_EQ(widths.size(), 2u) << down;
  EXPECT_NEAR(std::stod(widths[0]) / scale.per_second, 300, 10);
  EXPECT_EQ(down.find("recorder restarted"), std::string::npos);
}

TEST_F(HistoryPlot, CommandLinesAndLabelsAreEscaped) {
  HistoryPlotInput in = night();
  const RecordedProcess evil = process(666, {"sh", "-c",
                                             "<script>alert(1)</script>\xE2\x80\xAE"
                                             "cod.exe"});
  in.at_since.push_back({evil, "active", {{1, 2 * kGiB}}});
  HistoryEvent action = event(HistoryEventKind::kAction, at(10, 45));
  action.detail = R"({"command":"<b>&\"","exit":1})";
  in.events.push_back(action);
  in.title = "gpuclean history: <host>";
  const std::string svg = render_history_svg(in);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(svg.find("<host>"), std::string::npos);
  EXPECT_EQ(svg.find("\xE2\x80\xAE"), std::string::npos) << "no bidi override reaches a viewer";
  EXPECT_NE(svg.find("pid 666 sh -c &apos;&lt;script&gt;alert(1)&lt;/script&gt;"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("\\u{202e}"), std::string::npos) << "shown escaped instead";
  EXPECT_NE(svg.find("&lt;b&gt;&amp;&quot; (exit 1)"), std::string::npos);
  EXPECT_NE(svg.find("gpuclean history: &lt;host&gt;"), std::string::npos);
}

TEST_F(HistoryPlot, ALongCommandIsCutToItsColumn) {
  HistoryPlotInput in = night();
  std::vector<std::string> argv = {"python3", "-m", "vllm.entrypoints.openai.api_server"};
  for (int i = 0; i < 20; ++i) argv.push_back("--option-" + std::to_string(i));
  in.at_since.push_back({process(777, argv), "active", {{0, kGiB}}});
  const std::string svg = render_history_svg(in);
  const auto labels = all(svg, "<text class=\"lane-label\"[^>]*>(pid 777 [^<]*)</text>");
  ASSERT_EQ(labels.size(), 1u);
  EXPECT_LE(labels[0].size(), 40u) << labels[0];
  EXPECT_EQ(labels[0].substr(labels[0].size() - 3), "\xE2\x80\xA6") << labels[0];
  // The whole command is the lane's tooltip.
  EXPECT_NE(svg.find("--option-19"), std::string::npos);
}

TEST_F(HistoryPlot, AWindowAcrossMidnightDatesTheNewDay) {
  HistoryPlotInput in;
  in.since = at(23, 30);
  in.until = at(24, 30);
  in.recording_began = at(0, 0);
  const std::string svg = render_history_svg(in);
  EXPECT_EQ(all(svg, "<text class=\"tick\"[^>]*>([^<]*)</text>"),
            (std::vector<std::string>{"23:30", "23:40", "23:50", "12-06 00:00", "00:10", "00:20",
                                      "00:30"}));
}

TEST_F(HistoryPlot, AShortWindowShowsSeconds) {
  HistoryPlotInput in;
  in.since = at(10, 0, 0);
  in.until = at(10, 1, 30);
  const std::string svg = render_history_svg(in);
  const auto ticks = all(svg, "<text class=\"tick\"[^>]*>([^<]*)</text>");
  ASSERT_GE(ticks.size(), 6u);
  ASSERT_LE(ticks.size(), 11u);
  EXPECT_EQ(ticks[0], "10:00:00");
  EXPECT_EQ(ticks[1], "10:00:10");
}

TEST_F(HistoryPlot, ThirtyHoldersGiveTheTwentyThatHeldTheMost) {
  HistoryPlotInput in = night();
  in.events.clear();
  for (Pid pid = 1000; pid < 1030; ++pid) {
    // pid 1000 held the least, 1029 the most.
    in.at_since.push_back(
        {process(pid, {"worker"}), "active", {{0, static_cast<Bytes>(pid - 999) * kGiB}}});
  }
  const std::string svg = render_history_svg(in);
  EXPECT_EQ(count(svg, "<g class=\"lane\">"), 20u);
  EXPECT_NE(svg.find(">and 10 more holders</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">pid 1009 worker</text>"), std::string::npos) << "one of the least";
  EXPECT_NE(svg.find(">pid 1010 worker</text>"), std::string::npos);
  EXPECT_NE(svg.find(">pid 1029 worker</text>"), std::string::npos);
  // Taller than a picture of two lanes.
  const auto height = [](const std::string& doc) {
    return std::stod(all(doc, "<svg [^>]*height=\"([0-9.]+)\"").at(0));
  };
  EXPECT_GT(height(svg), height(render_history_svg(night())) + 17 * 20);
}

TEST_F(HistoryPlot, MarksCloseTogetherGetLabelsThatDoNotOverlap) {
  HistoryPlotInput in = night();
  for (int i = 0; i < 8; ++i) {
    HistoryEvent xid = event(HistoryEventKind::kXid, at(10, 10) + i * 40);
    xid.gpu = 0;
    xid.detail = "Xid 79 (PCI:0000:3b:00): GPU has fallen off the bus";
    in.events.push_back(xid);
  }
  const std::string svg = render_history_svg(in);
  const std::regex re(
      "<text class=\"mark-label\" x=\"([0-9.]+)\" y=\"([0-9.]+)\"[^>]*text-anchor=\"(\\w+)\">"
      "([^<]*)<");
  struct Label {
    double left, right, y;
  };
  std::vector<Label> labels;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    const double x = std::stod((*it)[1].str());
    const double width = static_cast<double>((*it)[4].str().size()) * 6;
    const bool end = (*it)[3].str() == "end";
    labels.push_back({end ? x - width : x, end ? x : x + width, std::stod((*it)[2].str())});
  }
  ASSERT_GE(labels.size(), 5u) << svg;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    for (std::size_t j = i + 1; j < labels.size(); ++j) {
      if (labels[i].y != labels[j].y) continue;
      EXPECT_TRUE(labels[i].right <= labels[j].left || labels[j].right <= labels[i].left)
          << i << " and " << j << " overlap";
    }
  }
  // All above the memory panel, none on the data.
  const auto panel_top = all(svg, "<rect class=\"not-recorded\" x=\"[0-9.]+\" y=\"([0-9.]+)\"");
  for (const Label& l : labels) EXPECT_LT(l.y, std::stod(panel_top.at(0)));
}

TEST_F(HistoryPlot, AnActionOfAnyShapeIsAMark) {
  HistoryPlotInput in = night();
  for (const char* detail : {R"({"command":5})", R"({"command":null,"exit":"x"})", "[1,2]",
                             "not json", R"({"exit":3})"}) {
    HistoryEvent action = event(HistoryEventKind::kAction, at(10, 45));
    action.detail = detail;
    in.events.push_back(action);
  }
  EXPECT_NO_THROW(render_history_svg(in));
}

// The example in docs/ (docs/history-plot-example.svg): written when GPUCLEAN_WRITE_EXAMPLES
// names a directory.
TEST_F(HistoryPlot, WritesTheExample) {
  const char* dir = std::getenv("GPUCLEAN_WRITE_EXAMPLES");
  if (dir == nullptr) GTEST_SKIP() << "GPUCLEAN_WRITE_EXAMPLES not set";
  std::ofstream(std::string(dir) + "/history-plot-example.svg") << render_history_svg(night());
}

}  // namespace
}  // namespace gpuclean::output
