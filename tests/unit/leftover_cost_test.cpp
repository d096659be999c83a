// What leftovers cost (src/diagnose/leftover_cost.h), against a small history computed by hand:
// alice's server (slurm job 42) is orphaned at 600 s with 8 GiB, goes idle at 900 s, drops to
// 4 GiB at 1800 s and is killed by root at 2400 s; bob's worker becomes an heir of 2 GiB at
// 1200 s and exits at 3000 s; 1 GiB nobody accounts for sits on GPU 1 from 3000 s to 4800 s.
// By hand, in GiB-seconds: alice 8 × 1200 + 4 × 600 = 12,000 (9,600 of it idle, all of it
// after 900 s known); bob 2 × 1800 = 3,600; unattributed 1 × 1800 = 1,800; in all 17,400
// (4.83 GiB-hours).
#include "diagnose/leftover_cost.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "input/action_reader.h"

namespace gpuclean::diagnose {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kT0 = 1'000'000;  // the history's first moment, Unix seconds

RecordedProcess alice_server() {
  RecordedProcess p;
  p.boot_id = "boot-1";
  p.pid = 100;
  p.start_ticks = 1000;
  p.user = "alice";
  p.argv = {"/usr/bin/python3", "serve.py", "--tp", "8"};
  p.owner = "slurm-job:42";
  return p;
}

RecordedProcess bob_worker() {
  RecordedProcess p;
  p.boot_id = "boot-1";
  p.pid = 200;
  p.start_ticks = 2000;
  p.user = "bob";
  p.argv = {"python3", "-m", "worker"};
  return p;
}

HistoryEvent event(HistoryEventKind kind, double at, const RecordedProcess* p = nullptr) {
  HistoryEvent e;
  e.kind = kind;
  e.time = kT0 + at;
  if (p != nullptr) e.process = *p;
  return e;
}

HistoryEvent klass(HistoryEventKind kind, double at, const RecordedProcess& p, const char* c) {
  HistoryEvent e = event(kind, at, &p);
  e.klass = c;
  return e;
}

HistoryEvent memory(double at, const RecordedProcess& p, unsigned gpu, double gib) {
  HistoryEvent e = event(HistoryEventKind::kMemoryChanged, at, &p);
  e.gpu = gpu;
  e.bytes = static_cast<Bytes>(gib * kGiB);
  return e;
}

HistoryEvent detail(HistoryEventKind kind, double at, const RecordedProcess* p, std::string text) {
  HistoryEvent e = event(kind, at, p);
  e.detail = std::move(text);
  return e;
}

HistoryEvent unattributed(HistoryEventKind kind, double at, unsigned gpu, double gib) {
  HistoryEvent e = event(kind, at);
  e.gpu = gpu;
  if (gib > 0) e.bytes = static_cast<Bytes>(gib * kGiB);
  return e;
}

// A gpuclean kill's action as the recorder stores it: the sender's JSON with the kernel's uid.
HistoryEvent kill_action(double at, unsigned uid, const std::string& user,
                         const RecordedProcess& target) {
  return detail(HistoryEventKind::kAction, at, nullptr,
                R"({"command": "kill", "args": ["--yes"], "exit": 0, "targets": [{"pid": )" +
                    std::to_string(target.pid) + R"(, "start_ticks": )" +
                    std::to_string(target.start_ticks) +
                    R"(, "comm": "x", "class": "orphan", "outcome": "gone"}], "uid": )" +
                    std::to_string(uid) + R"(, "user": ")" + user + R"(", "sender_pid": 4000})");
}

// The history above, with `extra` events merged in by time.
std::vector<HistoryEvent> history(std::vector<HistoryEvent> extra = {}) {
  const RecordedProcess a = alice_server();
  const RecordedProcess b = bob_worker();
  std::vector<HistoryEvent> events = {
      event(HistoryEventKind::kRecorderStarted, 0),
      klass(HistoryEventKind::kAppeared, 0, a, "active"),
      memory(0, a, 0, 8),
      klass(HistoryEventKind::kAppeared, 0, b, "active"),
      memory(0, b, 1, 2),
      klass(HistoryEventKind::kClassChanged, 600, a, "orphan"),
      detail(HistoryEventKind::kActivityChanged, 900, &a, "idle"),
      klass(HistoryEventKind::kClassChanged, 1200, b, "heir"),
      memory(1800, a, 0, 4),
      klass(HistoryEventKind::kLeft, 2400, a, "orphan"),
      detail(HistoryEventKind::kMemoryReturned, 2401, &a, "1.5"),
      klass(HistoryEventKind::kLeft, 3000, b, "heir"),
      unattributed(HistoryEventKind::kUnattributedAppeared, 3000, 1, 1),
      unattributed(HistoryEventKind::kUnattributedCleared, 4800, 1, 0),
  };
  for (HistoryEvent& e : extra) events.push_back(std::move(e));
  std::stable_sort(events.begin(), events.end(),
                   [](const HistoryEvent& x, const HistoryEvent& y) { return x.time < y.time; });
  return events;
}

// The report of [since, until) (seconds after kT0), as history --report makes it.
LeftoverCostReport report_of(const std::vector<HistoryEvent>& events, double since, double until,
                             CostGrouping by = CostGrouping::kUser) {
  LeftoverMeter meter(kT0 + since, kT0 + until);
  std::vector<RecordedAction> actions;
  for (const HistoryEvent& e : events) {
    if (auto action = input::read_action(e)) {
      actions.push_back(*action);
    } else {
      meter.apply(e);
    }
  }
  meter.advance(kT0 + until);
  return meter.report(by, actions);
}

double gib_seconds(double byte_seconds) {
  return byte_seconds / kGiB;
}

TEST(LeftoverCost, FiguresMatchTheHistoryComputedByHand) {
  const auto report = report_of(history({kill_action(2401, 0, "root", alice_server())}), 0, 7200);
  EXPECT_DOUBLE_EQ(gib_seconds(report.byte_seconds), 17400);
  EXPECT_NEAR(gib_hours(report.byte_seconds), 4.8333, 1e-4);
  EXPECT_DOUBLE_EQ(gib_seconds(report.class_byte_seconds.at("orphan")), 12000);
  EXPECT_DOUBLE_EQ(gib_seconds(report.class_byte_seconds.at("heir")), 3600);
  EXPECT_DOUBLE_EQ(gib_seconds(report.class_byte_seconds.at("unattributed")), 1800);
  EXPECT_DOUBLE_EQ(gib_seconds(report.idle_byte_seconds), 9600);
  EXPECT_DOUBLE_EQ(gib_seconds(report.known_byte_seconds), 9600);

  ASSERT_EQ(report.groups.size(), 3U);
  EXPECT_EQ(report.groups[0].key, "alice");
  EXPECT_DOUBLE_EQ(gib_seconds(report.groups[0].byte_seconds), 12000);
  EXPECT_EQ(report.groups[1].key, "bob");
  EXPECT_DOUBLE_EQ(gib_seconds(report.groups[1].byte_seconds), 3600);
  EXPECT_EQ(report.groups[2].key, kUnattributedKey);
  EXPECT_DOUBLE_EQ(gib_seconds(report.groups[2].byte_seconds), 1800);
  EXPECT_EQ(report.groups[2].leftovers, 0U);

  ASSERT_EQ(report.leftovers.size(), 2U);
  const LeftoverEpisode& a = report.leftovers[0];
  EXPECT_EQ(a.process.pid, 100);
  EXPECT_EQ(a.klass, "orphan");
  EXPECT_DOUBLE_EQ(a.since, kT0 + 600);
  EXPECT_DOUBLE_EQ(a.seconds(report.until), 1800);
  EXPECT_EQ(a.end.how, LeftoverEnd::How::kKilled);
  EXPECT_EQ(a.end.by_user, "root");
  EXPECT_EQ(a.end.by_command, "kill");
  EXPECT_EQ(a.peak_bytes, Bytes{8} << 30);
  ASSERT_TRUE(a.memory_back_seconds);
  EXPECT_DOUBLE_EQ(*a.memory_back_seconds, 1.5);
  const LeftoverEpisode& b = report.leftovers[1];
  EXPECT_EQ(b.process.pid, 200);
  EXPECT_EQ(b.end.how, LeftoverEnd::How::kExited);
  EXPECT_DOUBLE_EQ(*b.end.time, kT0 + 3000);
  ASSERT_EQ(report.unattributed.size(), 1U);
  EXPECT_EQ(report.unattributed[0].gpu, 1U);
  EXPECT_DOUBLE_EQ(report.unattributed[0].seconds, 1800);
}

// A dead job is a tree: alice's server has a worker (its parent the server, active itself)
// with 16 GiB on GPU 1 until both end at 2400 s; from 600 s, when the server is orphaned, the
// worker counts with it: 16 × 1800 more GiB-seconds in the server's episode.
TEST(LeftoverCost, ADeadJobsWorkersCountWithItInItsEpisode) {
  RecordedProcess worker = bob_worker();
  worker.pid = 300;
  worker.start_ticks = 3000;
  worker.user = "alice";
  worker.parent_pid = alice_server().pid;
  worker.parent_start_ticks = alice_server().start_ticks;
  const auto with_worker = [&worker] {
    return history({klass(HistoryEventKind::kAppeared, 0, worker, "active"),
                    memory(0, worker, 1, 16),
                    klass(HistoryEventKind::kLeft, 2400, worker, "active")});
  };
  const auto report = report_of(with_worker(), 0, 7200);
  EXPECT_DOUBLE_EQ(gib_seconds(report.byte_seconds), 17400 + 16 * 1800);
  const LeftoverEpisode& server = report.leftovers[0];
  EXPECT_EQ(server.process.pid, 100);
  EXPECT_DOUBLE_EQ(gib_seconds(server.byte_seconds), 12000 + 16 * 1800);
  EXPECT_DOUBLE_EQ(gib_seconds(server.gpu_byte_seconds.at(1)), 16 * 1800);
  EXPECT_EQ(server.members, std::vector<Pid>{300});
  EXPECT_EQ(server.peak_bytes, Bytes{24} << 30);
  EXPECT_EQ(report.leftovers.size(), 2U) << "the worker is in the server's episode, not its own";
  LeftoverMeter counter(0, std::numeric_limits<double>::infinity(), false);
  for (const HistoryEvent& e : with_worker()) counter.apply(e);
  EXPECT_DOUBLE_EQ(gib_seconds(counter.totals().at({"orphan", "slurm-job"})), 12000 + 16 * 1800);
  // Negative control: a process of that PID that is not the server's child (another start)
  // is not of its job.
  worker.parent_start_ticks = 999;
  EXPECT_DOUBLE_EQ(gib_seconds(report_of(with_worker(), 0, 7200).byte_seconds), 17400);
}

TEST(LeftoverCost, AProcessRecordedAsAppearingAgainIsTheSameLeftover) {
  // A recorder that could not read what it had open records alice's server appearing again at
  // 1000 s: the same process, one episode, its memory kept. Before, a second episode began with
  // no memory and the first stayed "still there": 6,400 GiB-seconds short.
  const auto report = report_of(
      history({klass(HistoryEventKind::kAppeared, 1000, alice_server(), "orphan")}), 0, 7200);
  EXPECT_DOUBLE_EQ(gib_seconds(report.byte_seconds), 17400);
  ASSERT_EQ(report.leftovers.size(), 2U);
  EXPECT_EQ(report.leftovers[0].end.how, LeftoverEnd::How::kExited) << "it left at 2,400 s";
  EXPECT_DOUBLE_EQ(report.leftovers[0].since, kT0 + 600);
}

TEST(LeftoverCost, OnlyTheWindowCounts) {
  // [1800, 3600): alice 4 GiB × 600 s, bob 2 GiB × 1200 s, unattributed 1 GiB × 600 s.
  const auto report = report_of(history(), 1800, 3600);
  EXPECT_DOUBLE_EQ(gib_seconds(report.byte_seconds), 2400 + 2400 + 600);
  // A leftover that ended before the window is not in it; one that began before it is.
  const auto later = report_of(history(), 3600, 7200);
  EXPECT_TRUE(later.leftovers.empty());
  EXPECT_DOUBLE_EQ(gib_seconds(later.byte_seconds), 1200);
  EXPECT_DOUBLE_EQ(report.leftovers[0].since, kT0 + 600);
}

TEST(LeftoverCost, GroupsByOwnerCommandAndGpu) {
  const auto by_owner = report_of(history(), 0, 7200, CostGrouping::kOwner);
  EXPECT_EQ(by_owner.groups[0].key, "slurm-job:42");
  EXPECT_EQ(by_owner.groups[1].key, "(no owner)");
  const auto by_command = report_of(history(), 0, 7200, CostGrouping::kCommand);
  EXPECT_EQ(by_command.groups[0].key, "python3 serve.py");
  EXPECT_EQ(by_command.groups[1].key, "python3 -m worker");
  const auto by_gpu = report_of(history(), 0, 7200, CostGrouping::kGpu);
  ASSERT_EQ(by_gpu.groups.size(), 2U);
  EXPECT_EQ(by_gpu.groups[0].key, "GPU 0");
  EXPECT_DOUBLE_EQ(gib_seconds(by_gpu.groups[0].byte_seconds), 12000);
  EXPECT_EQ(by_gpu.groups[1].key, "GPU 1");  // bob's heir and the unattributed memory
  EXPECT_DOUBLE_EQ(gib_seconds(by_gpu.groups[1].byte_seconds), 3600 + 1800);
  EXPECT_DOUBLE_EQ(gib_seconds(by_gpu.groups[1].class_byte_seconds.at("unattributed")), 1800);
}

TEST(LeftoverCost, NothingCountsWhileTheRecorderIsStopped) {
  // Down from 1000 s to 1500 s: alice's 8 GiB for 500 s are not counted, nor bob's 2 GiB from
  // 1200 s, when he became an heir, to 1500 s.
  const auto report = report_of(history({event(HistoryEventKind::kRecorderStopped, 1000),
                                         event(HistoryEventKind::kRecorderStarted, 1500)}),
                                0, 7200);
  EXPECT_DOUBLE_EQ(gib_seconds(report.byte_seconds), 17400 - 4000 - 600);
  EXPECT_DOUBLE_EQ(report.unwatched_seconds, 500);
}

TEST(LeftoverCost, OnlyRootOrItsOwnUserKillsALeftover) {
  // Any local user can send an action: mallory naming bob's worker gone explains nothing.
  const auto forged =
      report_of(history({kill_action(3001, 1001, "mallory", bob_worker())}), 0, 7200);
  EXPECT_EQ(forged.leftovers[1].end.how, LeftoverEnd::How::kExited);
  const auto own = report_of(history({kill_action(3001, 1002, "bob", bob_worker())}), 0, 7200);
  EXPECT_EQ(own.leftovers[1].end.how, LeftoverEnd::How::kKilled);
  EXPECT_EQ(own.leftovers[1].end.by_user, "bob");
  // A kill long after it left did not end it.
  const auto late = report_of(history({kill_action(4000, 0, "root", bob_worker())}), 0, 7200);
  EXPECT_EQ(late.leftovers[1].end.how, LeftoverEnd::How::kExited);
}

TEST(LeftoverCost, AFloodOfForgedActionsHidesNoRealKill) {
  // Any local user can send actions, as many as the recorder takes: 20,000 of mallory's naming
  // bob's worker, and bob's own kill among them. The report looks its kills up by target.
  std::vector<HistoryEvent> flood;
  for (int i = 0; i < 20000; ++i) flood.push_back(kill_action(2990, 1001, "mallory", bob_worker()));
  flood.push_back(kill_action(3001, 1002, "bob", bob_worker()));
  const auto report = report_of(history(std::move(flood)), 0, 7200);
  EXPECT_EQ(report.leftovers[1].end.how, LeftoverEnd::How::kKilled);
  EXPECT_EQ(report.leftovers[1].end.by_user, "bob");
}

TEST(LeftoverCost, TheRunThatOwnedALeftoverEndedIt) {
  std::vector<HistoryEvent> events = history();
  for (HistoryEvent& e : events) {
    if (e.process && e.process->pid == 200) e.process->owner = "gpuclean-run:77";
  }
  events.push_back(detail(HistoryEventKind::kAction, 3002, nullptr,
                          R"({"command": "run", "uid": 1002, "user": "bob", "sender_pid": 77})"));
  const auto report = report_of(events, 0, 7200);
  EXPECT_EQ(report.leftovers[1].end.how, LeftoverEnd::How::kKilled);
  EXPECT_EQ(report.leftovers[1].end.by_command, "run");
}

TEST(LeftoverCost, AStillOpenLeftoverIsStillThere) {
  std::vector<HistoryEvent> events = history();
  std::erase_if(events, [](const HistoryEvent& e) {
    return e.kind == HistoryEventKind::kLeft && e.process->pid == 100;
  });
  const auto report = report_of(events, 0, 7200);
  // 8 GiB × 1200 s, then 4 GiB to the window's end: 4 × 5400.
  EXPECT_DOUBLE_EQ(gib_seconds(report.class_byte_seconds.at("orphan")), 9600 + 21600);
  EXPECT_EQ(report.leftovers[0].end.how, LeftoverEnd::How::kStillThere);
  EXPECT_DOUBLE_EQ(report.leftovers[0].seconds(report.until), 6600);
}

TEST(LeftoverCost, ALeftoverNoLongerOneStopsCounting) {
  const auto report = report_of(
      history({klass(HistoryEventKind::kClassChanged, 1200, alice_server(), "stuck")}), 0, 7200);
  EXPECT_DOUBLE_EQ(gib_seconds(report.class_byte_seconds.at("orphan")), 8 * 600);
  ASSERT_EQ(report.leftovers.size(), 2U);
  const LeftoverEpisode& alice = report.leftovers[1];  // 600 s, bob's 1,800 s first
  EXPECT_EQ(alice.process.pid, 100);
  EXPECT_EQ(alice.end.how, LeftoverEnd::How::kReclassed);
  EXPECT_EQ(alice.end.detail, "stuck");
}

TEST(LeftoverCost, TheRecordersTotalsAreTheReportsFigures) {
  // The recorder keeps no episodes, only the counter's totals by class and owner kind: fed the
  // same events, they add up to the report's figures.
  LeftoverMeter counter(0, std::numeric_limits<double>::infinity(), false);
  for (const HistoryEvent& e : history()) counter.apply(e);
  counter.advance(kT0 + 7200);
  const CostTotals& totals = counter.totals();
  EXPECT_DOUBLE_EQ(gib_seconds(totals.at({"orphan", "slurm-job"})), 12000);
  EXPECT_DOUBLE_EQ(gib_seconds(totals.at({"heir", "none"})), 3600);
  EXPECT_DOUBLE_EQ(gib_seconds(totals.at({"unattributed", "none"})), 1800);
  double sum = 0;
  for (const auto& [key, held] : totals) sum += held;
  EXPECT_DOUBLE_EQ(sum, report_of(history(), 0, 7200).byte_seconds);
}

TEST(LeftoverCost, TheRecorderTakesUpWhatWasOpenWhenItStarted) {
  LeftoverMeter counter(0, std::numeric_limits<double>::infinity(), false);
  counter.take_up(alice_server(), "orphan", {{0, Bytes{2} << 30}}, "idle", kT0);
  counter.advance(kT0 + 100);
  EXPECT_DOUBLE_EQ(gib_seconds(counter.totals().at({"orphan", "slurm-job"})), 200);
}

TEST(LeftoverCost, ActionsThatAreNotAKillOrRunReadAsNone) {
  for (const char* text : {"not json", R"({"command": 5, "uid": 0})", R"({"command": "kill"})",
                           R"([1, 2])", R"({"command": "kill", "uid": -1})"}) {
    EXPECT_FALSE(input::read_action(detail(HistoryEventKind::kAction, 0, nullptr, text))) << text;
  }
  const auto read = input::read_action(detail(
      HistoryEventKind::kAction, 0, nullptr,
      R"({"command": "kill", "uid": 0, "targets": [{"pid": 1, "start_ticks": 2, "outcome": "gone"},)"
      R"( {"pid": 3, "start_ticks": 4, "outcome": "remaining"}, {"pid": "x"}, 7]})"));
  ASSERT_TRUE(read);
  EXPECT_EQ(read->gone, (std::vector<std::pair<Pid, std::uint64_t>>{{1, 2}}));
}

TEST(LeftoverCost, CommandNamesSayWhatRuns) {
  EXPECT_EQ(command_name({"/usr/bin/python3.11", "-u", "/srv/serve.py", "--tp", "8"}),
            "python3.11 serve.py");
  EXPECT_EQ(command_name({"python3", "-m", "vllm.entrypoints.openai.api_server"}),
            "python3 -m vllm.entrypoints.openai.api_server");
  EXPECT_EQ(command_name({"/opt/bin/sleep", "300"}), "sleep");
  EXPECT_EQ(command_name({"pythonista", "x.py"}), "pythonista");
  EXPECT_EQ(command_name({}), "(no command line)");
  EXPECT_EQ(owner_kind_of(""), "none");
  EXPECT_EQ(owner_kind_of("slurm-job:42"), "slurm-job");
  EXPECT_EQ(owner_kind_of("made-up:1"), "cgroup");  // a bounded label whatever the row says
}

}  // namespace
}  // namespace gpuclean::diagnose
