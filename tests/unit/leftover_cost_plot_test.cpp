// plot --report's picture (output/leftover_cost_plot.h): a bar per group as long as its
// GiB-hours, stacked by class; a lane per leftover from when it became one to how it ended;
// every piece of the history's text escaped; a readable page when nothing was left over.
#include "output/leftover_cost_plot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <utility>
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
constexpr double kHour = 3600;
constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

double at(int hour, int minute = 0) {
  return kDay + hour * kHour + minute * 60;
}

// --- Building a report -----------------------------------------------------------------------

RecordedProcess process(Pid pid, const std::string& user, std::vector<std::string> argv) {
  RecordedProcess p;
  p.boot_id = "boot";
  p.pid = pid;
  p.start_ticks = static_cast<std::uint64_t>(pid) * 10;
  p.user = user;
  p.argv = std::move(argv);
  return p;
}

// A leftover that held `gib` on `gpu` from `since` to `end.time` (or `until`).
LeftoverEpisode episode(const RecordedProcess& p, const std::string& klass, double since,
                        LeftoverEnd end, double gib, double until, unsigned gpu = 0) {
  LeftoverEpisode e;
  e.process = p;
  e.klass = klass;
  e.since = since;
  e.end = std::move(end);
  e.byte_seconds = gib * kGib * (e.end.time.value_or(until) - since);
  e.gpu_byte_seconds[gpu] = e.byte_seconds;
  e.class_byte_seconds[klass] = e.byte_seconds;
  e.peak_bytes = static_cast<Bytes>(gib * kGib);
  return e;
}

LeftoverEnd killed_by(const std::string& user, double time, const std::string& command = "kill") {
  LeftoverEnd end;
  end.how = LeftoverEnd::How::kKilled;
  end.time = time;
  end.by_user = user;
  end.by_command = command;
  return end;
}

LeftoverEnd ended(LeftoverEnd::How how, std::optional<double> time, std::string detail = "") {
  LeftoverEnd end;
  end.how = how;
  end.time = time;
  end.detail = std::move(detail);
  return end;
}

UnattributedCost unattributed(unsigned gpu, double gib, double seconds) {
  return {gpu, gib * kGib * seconds, seconds, static_cast<Bytes>(gib * kGib)};
}

// The groups by user, as diagnose/leftover_cost.h would make them: each leftover under its
// user, unattributed memory under "(unattributed)", the most first; and the totals.
void group_by_user(LeftoverCostReport& r) {
  std::map<std::string, LeftoverCostGroup> by_key;
  for (const LeftoverEpisode& e : r.leftovers) {
    LeftoverCostGroup& g = by_key[e.process.user];
    g.key = e.process.user;
    g.byte_seconds += e.byte_seconds;
    g.leftovers += 1;
    g.class_byte_seconds[e.klass] += e.byte_seconds;
  }
  for (const UnattributedCost& u : r.unattributed) {
    LeftoverCostGroup& g = by_key[std::string(kUnattributedKey)];
    g.key = kUnattributedKey;
    g.byte_seconds += u.byte_seconds;
    g.class_byte_seconds[std::string(kUnattributedClass)] += u.byte_seconds;
  }
  r.groups.clear();
  r.byte_seconds = 0;
  r.class_byte_seconds.clear();
  for (auto& [key, g] : by_key) {
    r.byte_seconds += g.byte_seconds;
    for (const auto& [klass, bs] : g.class_byte_seconds) r.class_byte_seconds[klass] += bs;
    r.groups.push_back(std::move(g));
  }
  std::stable_sort(r.groups.begin(), r.groups.end(),
                   [](const LeftoverCostGroup& a, const LeftoverCostGroup& b) {
                     return a.byte_seconds > b.byte_seconds;
                   });
  std::stable_sort(r.leftovers.begin(), r.leftovers.end(),
                   [&r](const LeftoverEpisode& a, const LeftoverEpisode& b) {
                     return a.seconds(r.until) > b.seconds(r.until);
                   });
}

// A day: alice's orphan (8 GiB, 10:00 to 15:00, killed by root: 40 GiB-h), bob's heir with a
// hostile command line (2 GiB, 12:00 to 16:00, exited: 8 GiB-h), 3 GiB on GPU 1 nobody accounted
// for for 2 h (6 GiB-h).
LeftoverCostReport day() {
  LeftoverCostReport r;
  r.since = at(0);
  r.until = at(24);
  r.leftovers.push_back(episode(process(4242, "alice", {"python3", "serve.py", "--port", "8000"}),
                                "orphan", at(10), killed_by("root", at(15)), 8, r.until));
  r.leftovers.push_back(episode(
      process(5151, "bob", {"sh", "-c", "echo <script>alert(1)</script>&\"\x1b]0;pwned\x07"}),
      "heir", at(12), ended(LeftoverEnd::How::kExited, at(16)), 2, r.until));
  r.unattributed.push_back(unattributed(1, 3, 2 * kHour));
  group_by_user(r);
  return r;
}

// --- Reading the document back ---------------------------------------------------------------

// Every match of `pattern`'s first group in `svg`.
std::vector<std::pair<std::string, double>> bars(const std::string& svg) {
  std::vector<std::pair<std::string, double>> found;
  const std::regex re(
      "<text class=\"cost-key\"[^>]*>([^<]*)</text>[\\s\\S]*?"
      "<rect class=\"cost-bar\" x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    found.emplace_back((*it)[1].str(), std::stod((*it)[2].str()));
  }
  return found;
}

class LeftoverCostPlot : public testing::InUtc {};

// --- The tests -------------------------------------------------------------------------------

TEST_F(LeftoverCostPlot, TheCheckerRefusesWhatIsNotXml) {
  EXPECT_EQ(xml_error("<svg a=\"1\"><g><text>a &amp; b</text></g><rect/></svg>\n"), "");
  EXPECT_NE(xml_error("<svg><g></svg>"), "");
  EXPECT_NE(xml_error("<svg><text>a & b</text></svg>"), "");
  EXPECT_NE(xml_error("<svg><text>a < b</text></svg>"), "");
  EXPECT_NE(xml_error("<svg a=\"1\" a=\"2\"/>"), "");
  EXPECT_NE(xml_error("<svg a=\"<\"/>"), "");
  EXPECT_NE(xml_error("<svg>\x1b[31m</svg>"), "");
  EXPECT_NE(xml_error("<svg/><svg/>"), "");
}

TEST_F(LeftoverCostPlot, TheDocumentIsWellFormedXml) {
  const std::string svg = render_leftover_cost_svg(day(), "gpuclean history --report: node7",
                                                   "2026-12-05 00:00 to 2026-12-06 00:00");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(xml_error(svg), "") << svg;
}

TEST_F(LeftoverCostPlot, BarsAreAsLongAsTheirGibHours) {
  const std::string svg = render_leftover_cost_svg(day(), "t", "s");
  const auto found = bars(svg);
  ASSERT_EQ(found.size(), 3u) << svg;
  EXPECT_EQ(found[0].first, "alice");
  EXPECT_EQ(found[1].first, "bob");
  EXPECT_EQ(found[2].first, "(unattributed)");
  // 40 : 8 : 6 GiB-hours.
  EXPECT_NEAR(found[1].second / found[0].second, 8.0 / 40, 0.001);
  EXPECT_NEAR(found[2].second / found[0].second, 6.0 / 40, 0.001);
  EXPECT_NE(svg.find(">40.0 GiB-h<"), std::string::npos);
  EXPECT_NE(svg.find(">8.0 GiB-h<"), std::string::npos);
  EXPECT_NE(svg.find(">6.0 GiB-h<"), std::string::npos);
  EXPECT_NE(svg.find(">54.0 GiB-h held in all: orphan 40.0, heir 8.0, unattributed 6.0"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("GiB-hours held by leftovers, by user"), std::string::npos);
  // Each bar in its class's colour, the legend naming them.
  EXPECT_EQ(all(svg, "<rect class=\"cost-segment\" data-class=\"([^\"]+)\""),
            (std::vector<std::string>{"orphan", "heir", "unattributed"}));
  EXPECT_NE(svg.find(">orphan</text>"), std::string::npos);
  EXPECT_NE(svg.find(">unattributed (no process)</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">zombie-leader</text>"), std::string::npos) << "none in this report";
}

TEST_F(LeftoverCostPlot, ABarIsStackedByClass) {
  LeftoverCostReport r = day();
  // alice's orphan became a zombie-leader for a quarter of its time.
  LeftoverCostGroup& alice = r.groups[0];
  alice.class_byte_seconds = {{"orphan", 30 * kGib * kHour}, {"zombie-leader", 10 * kGib * kHour}};
  const std::string svg = render_leftover_cost_svg(r, "t", "s");
  const std::regex re(
      "<rect class=\"cost-segment\" data-class=\"([^\"]+)\" x=\"([0-9.]+)\" y=\"[0-9.]+\" "
      "width=\"([0-9.]+)\"");
  std::vector<std::string> classes;
  std::vector<double> xs;
  std::vector<double> widths;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    classes.push_back((*it)[1].str());
    xs.push_back(std::stod((*it)[2].str()));
    widths.push_back(std::stod((*it)[3].str()));
  }
  ASSERT_GE(classes.size(), 2u);
  EXPECT_EQ(classes[0], "orphan");
  EXPECT_EQ(classes[1], "zombie-leader");
  EXPECT_NEAR(widths[0], 3 * widths[1], 0.05);
  EXPECT_NEAR(xs[1], xs[0] + widths[0], 0.05) << "side by side";
  EXPECT_NEAR(widths[0] + widths[1], bars(svg).at(0).second, 0.05);
}

TEST_F(LeftoverCostPlot, EachLeftoverHasALaneFromWhenItBecameOneToHowItEnded) {
  const std::string svg = render_leftover_cost_svg(day(), "t", "s");
  const auto lanes = all(svg, "(<g class=\"leftover-lane\">[\\s\\S]*?</g>\n)");
  ASSERT_EQ(lanes.size(), 2u) << svg;
  // The most first: alice's 40 GiB-h, then bob's 8.
  EXPECT_NE(lanes[0].find(">alice</text>"), std::string::npos) << lanes[0];
  EXPECT_NE(lanes[0].find(">pid 4242 python3 serve.py --port 8000</text>"), std::string::npos);
  EXPECT_NE(lanes[0].find("data-how=\"killed\""), std::string::npos);
  EXPECT_NE(lanes[0].find(">killed by root</text>"), std::string::npos);
  EXPECT_NE(lanes[1].find(">bob</text>"), std::string::npos) << lanes[1];
  EXPECT_NE(lanes[1].find("data-how=\"exited\""), std::string::npos);
  EXPECT_NE(lanes[1].find(">exited</text>"), std::string::npos);
  // Clock time across: 10:00 to 15:00 for alice's orphan.
  const double x3 = tick_x(svg, "03:00");
  const double per_hour = (tick_x(svg, "06:00") - x3) / 3;
  const auto x =
      all(lanes[0], "<rect class=\"leftover-bar\" data-class=\"orphan\" x=\"([0-9.]+)\"");
  const auto width = all(lanes[0], "<rect class=\"leftover-bar\"[^>]* width=\"([0-9.]+)\"");
  ASSERT_EQ(x.size(), 1u) << lanes[0];
  ASSERT_EQ(width.size(), 1u);
  EXPECT_NEAR(std::stod(x[0]), x3 + 7 * per_hour, 0.2);
  EXPECT_NEAR(std::stod(width[0]), 5 * per_hour, 0.2);
  // The memory nobody accounted for has no lane: a line says where.
  EXPECT_NE(svg.find("GPU 1 6.0 GiB-h (3.0 GiB at most, for 2h 0m)"), std::string::npos) << svg;
}

TEST_F(LeftoverCostPlot, ALeftoverFromBeforeTheWindowStartsAtItsEdgeAndOneStillThereRunsToItsEnd) {
  LeftoverCostReport r = day();
  r.leftovers.push_back(episode(process(6161, "carol", {"torchrun", "train.py"}), "zombie-leader",
                                at(-30), ended(LeftoverEnd::How::kStillThere, std::nullopt), 1,
                                r.until));
  r.leftovers.back().byte_seconds = 100 * kGib * kHour;  // the window's share: the most
  r.leftovers.push_back(episode(process(7171, "dave", {"python3", "infer.py"}), "orphan", at(20),
                                ended(LeftoverEnd::How::kReclassed, at(21), "stuck"), 1, r.until));
  const std::string svg = render_leftover_cost_svg(r, "t", "s");
  const auto lanes = all(svg, "(<g class=\"leftover-lane\">[\\s\\S]*?</g>\n)");
  ASSERT_EQ(lanes.size(), 4u);
  EXPECT_NE(lanes[0].find(">carol</text>"), std::string::npos) << lanes[0];
  EXPECT_NE(lanes[0].find("data-how=\"still-there\""), std::string::npos);
  EXPECT_NE(lanes[0].find(">still there</text>"), std::string::npos);
  const double x0 = tick_x(svg, "00:00");
  const double x24 = tick_x(svg, "12-06 00:00");
  EXPECT_NEAR(std::stod(all(lanes[0], "<rect class=\"leftover-bar\"[^>]* x=\"([0-9.]+)\"").at(0)),
              x0, 0.2);
  EXPECT_NEAR(
      std::stod(all(lanes[0], "<rect class=\"leftover-bar\"[^>]* width=\"([0-9.]+)\"").at(0)),
      x24 - x0, 0.2);
  EXPECT_NE(svg.find(">no longer a leftover (now stuck)</text>"), std::string::npos) << svg;
}

TEST_F(LeftoverCostPlot, HostileTextIsEscaped) {
  LeftoverCostReport r = day();
  r.leftovers[1].process.user = "mallory<b>&\"\x1b[2J";
  r.groups[1].key = r.leftovers[1].process.user;
  const std::string svg = render_leftover_cost_svg(r, "report: <host>&", "\x1b[31msub");
  EXPECT_EQ(xml_error(svg), "") << svg;
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(svg.find("<host>"), std::string::npos);
  EXPECT_EQ(svg.find('\x1b'), std::string::npos) << "no terminal escape reaches a viewer";
  EXPECT_EQ(svg.find('\x07'), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;\\e]0;pwned\\x07"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find(">mallory&lt;b&gt;&amp;&quot;"), std::string::npos) << "the bar's key";
  EXPECT_NE(svg.find("report: &lt;host&gt;&amp;"), std::string::npos);
}

TEST_F(LeftoverCostPlot, LongTextIsCutToItsRoom) {
  LeftoverCostReport r = day();
  std::vector<std::string> argv = {"python3", "-m", "vllm.entrypoints.openai.api_server"};
  for (int i = 0; i < 30; ++i) argv.push_back("--option-" + std::to_string(i));
  r.leftovers[0].process.argv = argv;
  r.leftovers[0].process.user = std::string(200, 'u');
  r.groups[0].key = std::string(300, 'k');
  const std::string svg = render_leftover_cost_svg(r, std::string(500, 't'), "s");
  const auto command = all(svg, "<text class=\"lane-command\"[^>]*>(pid 4242 [^<]*)</text>");
  ASSERT_EQ(command.size(), 1u);
  EXPECT_LE(command[0].size(), 60u) << command[0];
  EXPECT_EQ(command[0].substr(command[0].size() - 3), "\xE2\x80\xA6") << command[0];
  EXPECT_NE(svg.find("--option-29"), std::string::npos) << "the whole command is the tooltip";
  const auto user = all(svg, "<text class=\"lane-user\"[^>]*>([^<]*)</text>");
  ASSERT_EQ(user.size(), 2u);
  EXPECT_LE(user[0].size(), 14u);
  const auto key = all(svg, "<text class=\"cost-key\"[^>]*>([^<]*)</text>");
  ASSERT_FALSE(key.empty());
  EXPECT_LE(key[0].size(), 40u);
  const auto title = all(svg, "<text class=\"title\"[^>]*>([^<]*)</text>");
  ASSERT_EQ(title.size(), 1u);
  EXPECT_LE(title[0].size(), 140u);
}

TEST_F(LeftoverCostPlot, AnEmptyReportSaysSo) {
  LeftoverCostReport r;
  r.since = at(0);
  r.until = at(24);
  const std::string svg = render_leftover_cost_svg(r, "gpuclean history --report", "a day");
  EXPECT_EQ(xml_error(svg), "") << svg;
  EXPECT_NE(svg.find(">No leftovers held memory in this window</text>"), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "class=\"cost-bar\""), 0u);
  EXPECT_EQ(count(svg, "class=\"leftover-lane\""), 0u);
  EXPECT_EQ(svg.find("held in all"), std::string::npos);
  // What was not counted is still said.
  r.unwatched_seconds = 3 * kHour;
  r.recording_began = at(6);
  const std::string partial = render_leftover_cost_svg(r, "t", "s");
  EXPECT_NE(partial.find("The recorder was down for 3h 0m of this window"), std::string::npos)
      << partial;
  EXPECT_NE(partial.find("Recording began 2026-12-05 06:00:00"), std::string::npos);
}

TEST_F(LeftoverCostPlot, MoreThanTwelveGroupsFoldIntoOthers) {
  LeftoverCostReport r;
  r.since = at(0);
  r.until = at(24);
  for (int i = 0; i < 15; ++i) {
    // user0 held the most: 15 GiB for an hour; user14 the least, 1.
    const double gib = 15 - i;
    r.leftovers.push_back(episode(process(1000 + i, "user" + std::to_string(i), {"worker"}),
                                  "orphan", at(i), ended(LeftoverEnd::How::kExited, at(i + 1)), gib,
                                  r.until));
  }
  group_by_user(r);
  const std::string svg = render_leftover_cost_svg(r, "t", "s");
  EXPECT_EQ(xml_error(svg), "") << svg;
  const auto found = bars(svg);
  ASSERT_EQ(found.size(), 12u) << svg;
  EXPECT_EQ(found[10].first, "user10");
  EXPECT_EQ(found[11].first, "4 others");
  // The others: user11 to user14, 4 + 3 + 2 + 1 GiB-h, against user0's 15.
  EXPECT_NEAR(found[11].second / found[0].second, 10.0 / 15, 0.001);
  for (const auto& [key, width] : found) EXPECT_NE(key, "user11") << "folded into the others";
  EXPECT_NE(svg.find(">10.0 GiB-h<tspan"), std::string::npos);
  // The twelve leftovers that held the most have lanes.
  EXPECT_EQ(count(svg, "<g class=\"leftover-lane\">"), 12u);
  EXPECT_NE(svg.find("the 12 that held the most, of 15"), std::string::npos);
  EXPECT_EQ(svg.find(">pid 1012 worker</text>"), std::string::npos) << "one of the least";
  EXPECT_NE(svg.find(">pid 1011 worker</text>"), std::string::npos);
}

// docs/leftover-report-example.svg: a week on a node. alice's vLLM server left an orphan worker
// (8 GiB for 5 h) that root killed, and a Jupyter kernel that became stuck; bob's training
// script left an heir that exited; carol's torchrun leader is a zombie still holding memory;
// dave's gpuclean run killed its own leftover; 3 GiB on GPU 1 went unaccounted for for 2 h.
LeftoverCostReport week() {
  LeftoverCostReport r;
  r.since = at(-6 * 24);
  r.until = at(24);
  const int d = 24;  // hours in a day, for reading the times below
  r.leftovers.push_back(
      episode(process(48211, "alice",
                      {"python3", "-m", "vllm.entrypoints.openai.api_server", "--model",
                       "meta-llama/Llama-3.1-8B-Instruct", "--port", "8000"}),
              "orphan", at(-5 * d + 14), killed_by("root", at(-5 * d + 19)), 8, r.until));
  r.leftovers.push_back(
      episode(process(50977, "alice",
                      {"python3", "-m", "ipykernel_launcher", "-f",
                       "/home/alice/.local/share/jupyter/runtime/kernel-4f1c.json"}),
              "orphan", at(-3 * d + 9),
              ended(LeftoverEnd::How::kReclassed, at(-3 * d + 21), "stuck"), 1, r.until));
  r.leftovers.push_back(episode(
      process(61502, "bob", {"python3", "train.py", "--config", "configs/resnet50.yaml"}), "heir",
      at(-4 * d + 2), ended(LeftoverEnd::How::kExited, at(-4 * d + 11)), 2, r.until, 1));
  r.leftovers.push_back(
      episode(process(70314, "carol", {"torchrun", "--nproc-per-node", "2", "finetune.py"}),
              "zombie-leader", at(-1 * d + 18), ended(LeftoverEnd::How::kStillThere, std::nullopt),
              1, r.until));
  r.leftovers.push_back(episode(process(73020, "dave", {"python3", "bench.py", "--batch", "64"}),
                                "heir", at(-2 * d + 15),
                                killed_by("dave", at(-2 * d + 16, 30), "run"), 6, r.until));
  r.unattributed.push_back(unattributed(1, 3, 2 * kHour));
  group_by_user(r);
  r.known_byte_seconds = r.byte_seconds - r.unattributed[0].byte_seconds;
  r.idle_byte_seconds = 0.93 * r.known_byte_seconds;
  return r;
}

TEST_F(LeftoverCostPlot, TheExampleIsWellFormed) {
  const std::string svg = render_leftover_cost_svg(week(), "t", "s");
  EXPECT_EQ(xml_error(svg), "");
  EXPECT_EQ(count(svg, "<g class=\"leftover-lane\">"), 5u);
  EXPECT_EQ(all(svg, "<text class=\"tick\"[^>]*>([^<]*)</text>"),
            (std::vector<std::string>{"11-29", "11-30", "12-01", "12-02", "12-03", "12-04", "12-05",
                                      "12-06"}));
}

// The example in docs/ (docs/leftover-report-example.svg): written when GPUCLEAN_WRITE_EXAMPLES
// names a directory.
TEST_F(LeftoverCostPlot, WritesTheExample) {
  const char* dir = std::getenv("GPUCLEAN_WRITE_EXAMPLES");
  if (dir == nullptr) GTEST_SKIP() << "GPUCLEAN_WRITE_EXAMPLES not set";
  std::ofstream(std::string(dir) + "/leftover-report-example.svg")
      << render_leftover_cost_svg(week(), "gpuclean history --report: gpu-node-07",
                                  "2026-11-29 00:00:00 to 2026-12-06 00:00:00 (7d 0h), by user");
}

}  // namespace
}  // namespace gpuclean::output
