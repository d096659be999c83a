// `gpuclean history`'s text as a person reads it (issue 49): a holder's memory changes folded
// to its first, its peak and its last; a parent's command said once; lines that fit the
// terminal; JSON Lines for --follow --json. Each check fails on the writer before issue 49's
// readability work (86a1e0c and earlier printed every change and every parent's command).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "output/history_view.h"
#include "output/text_width.h"

namespace gpuclean {
namespace {

constexpr Bytes kGiB = Bytes{1} << 30;
constexpr Bytes kMiB = Bytes{1} << 20;

RecordedProcess process(Pid pid, std::vector<std::string> argv, Pid parent = 0,
                        std::vector<std::string> parent_argv = {}) {
  RecordedProcess p;
  p.boot_id = "boot";
  p.pid = pid;
  p.start_ticks = 1000 + static_cast<std::uint64_t>(pid);
  p.user = "alice";
  p.argv = std::move(argv);
  if (parent != 0) {
    p.parent_pid = parent;
    p.parent_start_ticks = 5;
    p.parent_argv = std::move(parent_argv);
  }
  return p;
}

HistoryEvent holder_event(HistoryEventKind kind, double time, const RecordedProcess& p,
                          std::optional<Bytes> bytes = std::nullopt) {
  HistoryEvent e;
  e.kind = kind;
  e.time = time;
  e.process = p;
  e.bytes = bytes;
  if (kind == HistoryEventKind::kMemoryChanged) e.gpu = 0;
  if (kind == HistoryEventKind::kAppeared) e.klass = "active";
  return e;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string written(const std::vector<HistoryEvent>& events, output::TimelineOptions options) {
  std::ostringstream out;
  output::TimelineWriter writer(out, options);
  for (const HistoryEvent& e : events) writer.write(e);
  writer.finish();
  return out.str();
}

// One process growing its KV cache 93 times in two minutes, then leaving.
std::vector<HistoryEvent> a_growing_server() {
  const RecordedProcess server = process(42, {"python3", "serve.py"});
  std::vector<HistoryEvent> events = {holder_event(HistoryEventKind::kAppeared, 100, server)};
  for (int i = 0; i < 93; ++i) {
    // Up to 10 GiB at the 60th change, then down to 8 GiB.
    const Bytes bytes = i <= 60 ? kGiB + static_cast<Bytes>(i) * 150 * kMiB : 8 * kGiB;
    events.push_back(holder_event(HistoryEventKind::kMemoryChanged, 101 + i, server, bytes));
  }
  events.push_back(holder_event(HistoryEventKind::kLeft, 300, server, 8 * kGiB));
  return events;
}

TEST(HistoryTimeline, AHoldersMemoryChangesFoldToTheFirstThePeakAndTheLast) {
  const std::vector<std::string> lines = lines_of(written(a_growing_server(), {}));
  ASSERT_EQ(lines.size(), 4u) << written(a_growing_server(), {});
  EXPECT_NE(lines[0].find("appeared"), std::string::npos);
  EXPECT_NE(lines[1].find("now holds 1.0 GiB"), std::string::npos) << lines[1];
  // The fold comes before the line that says it left, stamped with its last change.
  EXPECT_NE(lines[2].find("92 more changes"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("peak 9.8 GiB"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("last 8.0 GiB"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("left"), std::string::npos);

  // Negative control: --all lists each change.
  output::TimelineOptions all;
  all.every_memory_change = true;
  EXPECT_EQ(lines_of(written(a_growing_server(), all)).size(), 95u);
}

TEST(HistoryTimeline, AFoldStillOpenAtTheEndIsSaidAndOneChangeIsJustALine) {
  std::vector<HistoryEvent> events = a_growing_server();
  events.pop_back();  // it has not left
  const std::vector<std::string> lines = lines_of(written(events, {}));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[2].find("92 more changes"), std::string::npos) << lines[2];

  // A single change has nothing to fold: no "more changes" line.
  events.resize(2);
  const std::string one = written(events, {});
  EXPECT_EQ(lines_of(one).size(), 2u) << one;
  EXPECT_EQ(one.find("more change"), std::string::npos) << one;
}

TEST(HistoryTimeline, AParentsCommandIsSaidOnceNotOnEveryWorkersLine) {
  const std::string parent_command =
      "torchrun --nproc-per-node 8 train.py " + std::string(150, 'x');
  std::vector<HistoryEvent> events;
  for (Pid worker = 100; worker < 108; ++worker) {
    events.push_back(holder_event(
        HistoryEventKind::kAppeared, 10 + worker,
        process(worker, {"python3", "-u", "train.py"}, 42,
                {"torchrun", "--nproc-per-node", "8", "train.py", std::string(150, 'x')})));
  }
  const std::string text = written(events, {});
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_NE(lines[0].find("parent 42 torchrun"), std::string::npos) << lines[0];
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_NE(lines[i].find("parent 42"), std::string::npos) << lines[i];
    EXPECT_EQ(lines[i].find("torchrun"), std::string::npos) << "said again: " << lines[i];
  }
}

TEST(HistoryTimeline, LinesFitTheTerminalWhenOneIsGivenAndStayWholeOtherwise) {
  const RecordedProcess p = process(7, {"python3", std::string(300, 'a')});
  const std::vector<HistoryEvent> events = {holder_event(HistoryEventKind::kAppeared, 1, p)};
  output::TimelineOptions narrow;
  narrow.width = 80;
  for (const std::string& line : lines_of(written(events, narrow))) {
    EXPECT_LE(output::display_columns(line), 80u) << line;
    EXPECT_NE(line.find("…"), std::string::npos) << "a cut line says so: " << line;
  }
  // Negative control: into a pipe (no width), the line is whole.
  EXPECT_GT(output::display_columns(lines_of(written(events, {})).at(0)), 80u);
}

TEST(HistoryTimeline, FollowedJsonIsOneObjectPerLineWithEveryChange) {
  output::TimelineOptions lines_format;
  lines_format.format = output::TimelineFormat::kJsonLines;
  const std::vector<std::string> lines = lines_of(written(a_growing_server(), lines_format));
  ASSERT_EQ(lines.size(), 95u) << "JSON is for programs: nothing folded";
  for (const std::string& line : lines) {
    const nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(event.is_object()) << line;
    EXPECT_TRUE(event.contains("kind"));
  }
}

// An action's fields but uid and user are its sender's text, of any JSON type: on cd452cf
// {"command": 5} threw out of the writer and `history` aborted.
TEST(HistoryTimeline, AnActionOfAnyShapeIsALine) {
  HistoryEvent action;
  action.kind = HistoryEventKind::kAction;
  action.time = 5;
  action.detail = R"({"command": 5, "args": [1, null, "--yes"], "exit": "0", "user": "alice"})";
  std::string text;
  ASSERT_NO_THROW(text = written({action}, {}));
  EXPECT_NE(text.find("alice ran gpuclean ? --yes"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuclean
