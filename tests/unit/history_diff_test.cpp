// What the flight recorder writes between two looks (src/diagnose/history_diff.h), from plain
// diagnoses: a server appears with its parent, is orphaned when the parent dies (and still
// names that parent), its memory moves, it leaves; a PID reused by another process is another
// holder; unattributed memory appears and clears.
#include "diagnose/history_diff.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuclean::diagnose {
namespace {

constexpr Bytes kOneGiB = Bytes{1} << 30;

ProcessInfo process(Pid pid, Pid ppid, std::uint64_t start, std::vector<std::string> argv) {
  ProcessInfo info;
  info.pid = pid;
  info.ppid = ppid;
  info.start_ticks = start;
  info.user = "alice";
  info.comm = argv.empty() ? "?" : argv.front();
  info.cmdline = std::move(argv);
  return info;
}

Holder holder(const ProcessInfo& info, HolderClass klass, std::map<unsigned, Bytes> memory) {
  Holder h;
  h.process = info;
  h.klass = klass;
  h.gpu_memory = std::move(memory);
  return h;
}

Diagnosis diagnosis(std::vector<Holder> holders, Bytes unattributed_gpu0 = 0) {
  Diagnosis d;
  d.holders = std::move(holders);
  GpuReport gpu;
  gpu.gpu.index = 0;
  gpu.unattributed = unattributed_gpu0;
  d.gpus.push_back(gpu);
  return d;
}

std::vector<HistoryEventKind> kinds(const std::vector<HistoryEvent>& events) {
  std::vector<HistoryEventKind> out;
  for (const HistoryEvent& e : events) out.push_back(e.kind);
  return out;
}

const ProcessInfo kLauncher = process(100, 1, 10, {"bash", "run_server.sh", "--tp", "8"});
const ProcessInfo kServer = process(200, 100, 20, {"python3", "serve.py"});

TEST(HistoryDiff, AServerAppearsIsOrphanedAndLeavesNamingItsDeadParent) {
  const std::map<Pid, ProcessInfo> parents = {{100, kLauncher}};
  RecorderState empty;
  RecorderState first =
      recorder_state(diagnosis({holder(kServer, HolderClass::kActive, {{0, 76 * kOneGiB}})}), empty,
                     parents, "b1");
  auto appeared = history_events(empty, first, 1000);
  ASSERT_EQ(kinds(appeared),
            (std::vector{HistoryEventKind::kAppeared, HistoryEventKind::kMemoryChanged}));
  ASSERT_TRUE(appeared[0].process);
  EXPECT_EQ(appeared[0].process->boot_id, "b1");
  EXPECT_EQ(appeared[0].process->parent_pid, 100);
  EXPECT_EQ(appeared[0].process->parent_argv, kLauncher.cmdline);
  EXPECT_EQ(appeared[0].klass, "active");
  EXPECT_EQ(appeared[0].bytes, 76 * kOneGiB);
  EXPECT_EQ(appeared[1].gpu, 0u);

  // The launcher dies: the server is re-parented to init and is an orphan. /proc no longer
  // has the launcher (no parents given), yet the recorded parent stays.
  ProcessInfo orphaned = kServer;
  orphaned.ppid = 1;
  RecorderState second = recorder_state(
      diagnosis({holder(orphaned, HolderClass::kOrphan, {{0, 76 * kOneGiB}})}), first, {}, "b1");
  auto changed = history_events(first, second, 1010);
  ASSERT_EQ(kinds(changed), std::vector{HistoryEventKind::kClassChanged});
  EXPECT_EQ(changed[0].klass, "orphan");
  EXPECT_EQ(changed[0].detail, "active");
  EXPECT_EQ(changed[0].process->parent_argv, kLauncher.cmdline) << "the dead parent is named";

  // Killed: it leaves, with its memory at last sight.
  RecorderState third = recorder_state(diagnosis({}), second, {}, "b1");
  auto left = history_events(second, third, 1020);
  ASSERT_EQ(kinds(left), std::vector{HistoryEventKind::kLeft});
  EXPECT_EQ(left[0].bytes, 76 * kOneGiB);
  EXPECT_EQ(left[0].klass, "orphan");

  // Negative control: the same look twice is no event.
  EXPECT_TRUE(history_events(second, second, 1015).empty());
}

TEST(HistoryDiff, MemoryIsRecordedWhenItMovesByAStepOrToAndFromZero) {
  RecorderState empty;
  auto look = [&](const RecorderState& before, std::map<unsigned, Bytes> memory) {
    return recorder_state(diagnosis({holder(kServer, HolderClass::kActive, std::move(memory))}),
                          before, {}, "b1");
  };
  RecorderState a = look(empty, {{0, 10 * kOneGiB}});
  RecorderState churn = look(a, {{0, 10 * kOneGiB + (Bytes{8} << 20)}});
  EXPECT_TRUE(history_events(a, churn, 1).empty()) << "8 MiB of allocator churn is not history";
  RecorderState grown = look(a, {{0, 11 * kOneGiB}, {1, Bytes{4} << 20}});
  auto events = history_events(a, grown, 2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].gpu, 0u);
  EXPECT_EQ(events[0].bytes, 11 * kOneGiB);
  EXPECT_EQ(events[1].gpu, 1u) << "4 MiB, but from nothing: recorded";
  RecorderState freed = look(grown, {{0, 11 * kOneGiB}});
  auto gone = history_events(grown, freed, 3);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].gpu, 1u);
  EXPECT_EQ(gone[0].bytes, 0u);
}

TEST(HistoryDiff, ASlowCreepIsRecordedOnceItAddsUpToAStep) {
  // Issue 49: the step was measured from the previous look, so a holder growing 32 MiB a look
  // went from 1 GiB to 2.25 GiB with the history still saying 1 GiB (on 0cc3abe this test saw
  // no memory event after the first, and the last recorded figure 1 GiB).
  auto look = [](const RecorderState& before, Bytes bytes) {
    return recorder_state(diagnosis({holder(kServer, HolderClass::kActive, {{0, bytes}})}), before,
                          {}, "b1");
  };
  RecorderState state;
  Bytes recorded = 0;
  std::size_t memory_events = 0;
  const Bytes creep = Bytes{32} << 20;
  for (int i = 0; i <= 40; ++i) {
    RecorderState now = look(state, kOneGiB + static_cast<Bytes>(i) * creep);
    for (const HistoryEvent& e : history_events(state, now, i)) {
      if (e.kind != HistoryEventKind::kMemoryChanged) continue;
      ++memory_events;
      recorded = *e.bytes;
    }
    state = std::move(now);
  }
  const Bytes live = kOneGiB + 40 * creep;  // 2.25 GiB
  EXPECT_GT(memory_events, 10u) << "one event per 64 MiB of growth, about";
  EXPECT_LT(live - recorded, Bytes{64} << 20) << "the history is within a step of the truth";
  // Negative control: churn around one figure (±32 MiB) is not history.
  RecorderState churn = look(state, live);
  std::size_t churn_events = 0;
  for (int i = 0; i < 20; ++i) {
    RecorderState now = look(churn, live + ((i % 2) != 0 ? creep : 0));
    churn_events += history_events(churn, now, 100 + i).size();
    churn = std::move(now);
  }
  EXPECT_EQ(churn_events, 0u);
}

TEST(HistoryDiff, WithoutNvmlAHoldersMemoryIsUnknownNotZero) {
  // Issue 49: without NVML (no GPU in the diagnosis) `appeared` and `left` carried 0 bytes, and
  // history said "holding 0 B at last sight" (0cc3abe set both to 0 unconditionally; this test
  // reads a field it did not have, so it was not run there).
  RecorderState empty;
  Diagnosis blind;
  blind.holders = {holder(kServer, HolderClass::kActive, {})};
  RecorderState seen = recorder_state(blind, empty, {}, "b1");
  EXPECT_FALSE(seen.memory_known);
  auto appeared = history_events(empty, seen, 1);
  ASSERT_FALSE(appeared.empty());
  EXPECT_FALSE(appeared[0].bytes.has_value()) << "unknown, not 0";
  Diagnosis gone;
  RecorderState after = recorder_state(gone, seen, {}, "b1");
  auto left = history_events(seen, after, 2);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].kind, HistoryEventKind::kLeft);
  EXPECT_FALSE(left[0].bytes.has_value());
  // Negative control: with NVML answering, a holder of no memory left holding 0 bytes.
  RecorderState with_nvml =
      recorder_state(diagnosis({holder(kServer, HolderClass::kActive, {})}), empty, {}, "b1");
  RecorderState none = recorder_state(diagnosis({}), with_nvml, {}, "b1");
  auto known = history_events(with_nvml, none, 3);
  ASSERT_EQ(known.size(), 1u);
  EXPECT_EQ(known[0].bytes, std::optional<Bytes>(0));
}

TEST(HistoryDiff, AnActivityChangeIsRecordedOnceItHoldsStampedWhenItBegan) {
  // Issue 49: busy and idle were recorded at every look: a holder flipping each look wrote a
  // row each look (on 0cc3abe this test's flipping half gave 20 activity rows, not 0).
  auto look = [](const RecorderState& before, bool busy) {
    Holder h = holder(kServer, HolderClass::kActive, {{0, kOneGiB}});
    h.activity = HolderActivity{};
    if (busy) h.activity->sm = 90;
    return recorder_state(diagnosis({h}), before, {}, "b1");
  };
  auto activity_rows = [](const std::vector<HistoryEvent>& events) {
    std::vector<HistoryEvent> rows;
    for (const HistoryEvent& e : events) {
      if (e.kind == HistoryEventKind::kActivityChanged) rows.push_back(e);
    }
    return rows;
  };
  RecorderState empty;
  RecorderState state = look(empty, true);
  ASSERT_EQ(activity_rows(history_events(empty, state, 0)).size(), 1u) << "known at appearance";
  std::size_t flips = 0;
  for (int i = 1; i <= 20; ++i) {
    RecorderState now = look(state, i % 2 == 0);
    flips += activity_rows(history_events(state, now, i)).size();
    state = std::move(now);
  }
  EXPECT_EQ(flips, 0u) << "a flip at every look is no change of state";
  // Idle that holds: recorded after kActivityHoldLooks looks, stamped with its first.
  std::vector<HistoryEvent> recorded;
  for (int i = 21; i < 21 + kActivityHoldLooks; ++i) {
    RecorderState now = look(state, false);
    for (const HistoryEvent& e : activity_rows(history_events(state, now, i)))
      recorded.push_back(e);
    state = std::move(now);
  }
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].detail, "idle");
  EXPECT_EQ(recorded[0].time, 21);
  // Negative control: staying idle writes nothing more.
  RecorderState still = look(state, false);
  EXPECT_TRUE(activity_rows(history_events(state, still, 30)).empty());
}

TEST(HistoryDiff, AReusedPidIsAnotherHolderAndAYoungerParentIsNoParent) {
  RecorderState empty;
  RecorderState first = recorder_state(diagnosis({holder(kServer, HolderClass::kActive, {})}),
                                       empty, {{100, kLauncher}}, "b1");
  // Same PID, later start: the first left and a new process appeared.
  const ProcessInfo reused = process(200, 100, 99, {"sleep", "300"});
  // Its "parent" 100 is now a process that started after it: a PID reused, not its parent.
  const ProcessInfo impostor = process(100, 1, 500, {"evil"});
  RecorderState second = recorder_state(diagnosis({holder(reused, HolderClass::kActive, {})}),
                                        first, {{100, impostor}}, "b1");
  auto events = history_events(first, second, 5);
  ASSERT_EQ(kinds(events), (std::vector{HistoryEventKind::kLeft, HistoryEventKind::kAppeared}));
  EXPECT_EQ(events[0].process->start_ticks, 20u);
  EXPECT_EQ(events[1].process->start_ticks, 99u);
  EXPECT_EQ(events[1].process->parent_pid, 100);
  EXPECT_FALSE(events[1].process->parent_start_ticks) << "the impostor is not its parent";
  EXPECT_TRUE(events[1].process->parent_argv.empty());
}

TEST(HistoryDiff, UnattributedMemoryAppearsAboveTheFloorAndClears) {
  RecorderState empty;
  RecorderState reserve = recorder_state(diagnosis({}, Bytes{200} << 20), empty, {}, "b1");
  EXPECT_TRUE(history_events(empty, reserve, 1).empty()) << "the driver's reserve is no event";
  RecorderState stranded = recorder_state(diagnosis({}, 40 * kOneGiB), reserve, {}, "b1");
  auto appeared = history_events(reserve, stranded, 2);
  ASSERT_EQ(kinds(appeared), std::vector{HistoryEventKind::kUnattributedAppeared});
  EXPECT_EQ(appeared[0].bytes, 40 * kOneGiB);
  EXPECT_FALSE(appeared[0].process);
  RecorderState back = recorder_state(diagnosis({}, 0), stranded, {}, "b1");
  EXPECT_EQ(kinds(history_events(stranded, back, 3)),
            std::vector{HistoryEventKind::kUnattributedCleared});
}

TEST(HistoryDiff, AHolderKnownOnlyFromNvmlHasNoIdentityToRecord) {
  Holder foreign = holder(process(300, 0, 0, {}), HolderClass::kForeign, {{0, kOneGiB}});
  foreign.visible = false;
  RecorderState state = recorder_state(diagnosis({foreign}), {}, {}, "b1");
  EXPECT_TRUE(state.holders.empty());
}

// Memory coming back after its holder left: awaited until the GPU's used memory has dropped by
// what the holder held, then said with how long it took; never said while it has not.
TEST(HistoryDiff, AHoldersMemoryIsSaidReturnedOnlyOnceTheGpuFreedIt) {
  auto look = [](const RecorderState& before, std::vector<Holder> holders, Bytes used) {
    Diagnosis d = diagnosis(std::move(holders));
    d.gpus[0].gpu.memory = GpuMemory{};
    d.gpus[0].gpu.memory->used = used;
    return recorder_state(d, before, {}, "b1");
  };
  RecorderState holding =
      look({}, {holder(kServer, HolderClass::kOrphan, {{0, 76 * kOneGiB}})}, 77 * kOneGiB);
  // It left, but the driver still holds its memory (a Zl leader's threads, say).
  RecorderState left = look(holding, {}, 77 * kOneGiB);
  EXPECT_EQ(kinds(history_events(holding, left, 100)), std::vector{HistoryEventKind::kLeft});
  EXPECT_TRUE(memory_returns(holding, left, 100).empty()) << "nothing came back yet";
  ASSERT_EQ(left.awaited.size(), 1u);
  // Someone else allocates 20 MiB meanwhile; the 76 GiB come back 2.5 s after it left.
  RecorderState back = look(left, {}, kOneGiB + (Bytes{20} << 20));
  auto returned = memory_returns(left, back, 102.5);
  ASSERT_EQ(kinds(returned), std::vector{HistoryEventKind::kMemoryReturned});
  EXPECT_EQ(returned[0].bytes, 76 * kOneGiB);
  EXPECT_EQ(returned[0].gpu, 0u);
  EXPECT_EQ(returned[0].detail, "2.500");
  EXPECT_EQ(returned[0].process->pid, kServer.pid);
  EXPECT_TRUE(back.awaited.empty());
  // Never back: dropped after the patience, unsaid (unattributed memory tells that story).
  RecorderState stuck = look(left, {}, 77 * kOneGiB);
  EXPECT_TRUE(memory_returns(left, stuck, 100 + 601).empty());
  EXPECT_TRUE(stuck.awaited.empty());
}

}  // namespace
}  // namespace gpuclean::diagnose
