// The flight recorder's database (src/history/event_store.h) on real SQLite files in a scratch
// directory: events round-trip with their process identities, "who held it at T", a restart's
// view of what is still open, retention by age and by size, and the files it must refuse or
// survive (a symlink, a non-database, a newer schema, a read-only directory).
#include "history/event_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../integration/spawn.h"

namespace gpuclean::history {
namespace {

using gpuclean::testing::TempDir;

RecordedProcess server(Pid pid, std::uint64_t start) {
  RecordedProcess process;
  process.boot_id = "boot-a";
  process.pid = pid;
  process.start_ticks = start;
  process.user = "alice";
  process.argv = {"python3", "serve.py", "--tp", "8", ""};  // an empty argument survives too
  process.parent_pid = 100;
  process.parent_start_ticks = 50;
  process.parent_argv = {"bash", "run_server.sh", "--tp 8"};
  return process;
}

HistoryEvent holder_event(HistoryEventKind kind, double time, const RecordedProcess& process) {
  HistoryEvent event;
  event.kind = kind;
  event.time = time;
  event.process = process;
  return event;
}

HistoryEvent memory_event(double time, const RecordedProcess& process, unsigned gpu, Bytes bytes) {
  HistoryEvent event = holder_event(HistoryEventKind::kMemoryChanged, time, process);
  event.gpu = gpu;
  event.bytes = bytes;
  return event;
}

class EventStoreTest : public ::testing::Test {
 protected:
  EventStore writer() {
    auto store = EventStore::open(path_, false);
    EXPECT_TRUE(store.ok()) << store.error().message();
    return std::move(store).value();
  }
  TempDir dir_;
  std::string path_ = dir_.path() + "/var/history.db";
};

TEST_F(EventStoreTest, EventsRoundTripWithTheProcessAndItsParent) {
  EventStore store = writer();
  const RecordedProcess p = server(4242, 9000);
  HistoryEvent appeared = holder_event(HistoryEventKind::kAppeared, 1000.5, p);
  appeared.klass = "active";
  HistoryEvent orphaned = holder_event(HistoryEventKind::kClassChanged, 1010, p);
  orphaned.klass = "orphan";
  orphaned.detail = "active";
  ASSERT_TRUE(store.append({appeared, memory_event(1000.5, p, 3, 76ULL << 30), orphaned}).ok());

  auto events = store.events({});
  ASSERT_TRUE(events.ok()) << events.error().message();
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ(events->at(0).kind, HistoryEventKind::kAppeared);
  EXPECT_EQ(events->at(0).klass, "active");
  ASSERT_TRUE(events->at(0).process.has_value());
  const RecordedProcess& back = *events->at(0).process;
  EXPECT_EQ(back.pid, 4242);
  EXPECT_EQ(back.start_ticks, 9000u);
  EXPECT_EQ(back.argv, p.argv);
  EXPECT_EQ(back.parent_pid, 100);
  EXPECT_EQ(back.parent_start_ticks, 50u);
  EXPECT_EQ(back.parent_argv, p.parent_argv);
  EXPECT_EQ(events->at(1).gpu, 3u);
  EXPECT_EQ(events->at(1).bytes, 76ULL << 30);
  EXPECT_EQ(events->at(2).detail, "active");

  // The process was stored once, however many of its events there are.
  auto one_process = EventStore::open(path_, true);
  ASSERT_TRUE(one_process.ok());
  EXPECT_EQ(one_process->events({.pid = 4242})->size(), 3u);
  EXPECT_EQ(one_process->events({.pid = 4243})->size(), 0u) << "another PID has no events";
}

TEST_F(EventStoreTest, ARecordedParentAndIdleSinceAreThatProcesssOnly) {
  // What explain and status --db read back: the parent captured for this boot, PID and start,
  // when its child was first seen orphaned, and when it last went idle.
  EventStore store = writer();
  const RecordedProcess p = server(4242, 9000);
  HistoryEvent orphaned = holder_event(HistoryEventKind::kClassChanged, 1010, p);
  orphaned.klass = "orphan";
  HistoryEvent again = holder_event(HistoryEventKind::kClassChanged, 1020, p);
  again.klass = "orphan";
  HistoryEvent busy = holder_event(HistoryEventKind::kActivityChanged, 1030, p);
  busy.detail = "busy (SM 87%, memory 5%)";
  HistoryEvent idle = holder_event(HistoryEventKind::kActivityChanged, 1040, p);
  idle.detail = "idle";
  ASSERT_TRUE(
      store
          .append({holder_event(HistoryEventKind::kAppeared, 1000, p), orphaned, again, busy, idle})
          .ok());
  auto parent = store.recorded_parent("boot-a", 4242, 9000);
  ASSERT_TRUE(parent.ok()) << parent.error().message();
  ASSERT_TRUE(*parent);
  EXPECT_EQ((*parent)->pid, 100);
  EXPECT_EQ((*parent)->argv, p.parent_argv);
  EXPECT_EQ((*parent)->gone_by, 1010.0);  // the first time it was seen orphaned
  EXPECT_EQ(*store.idle_since("boot-a", 4242, 9000), 1040.0);
  // Another start of the PID, or another boot: another process, nothing recorded for it.
  EXPECT_FALSE(*store.recorded_parent("boot-a", 4242, 9001));
  EXPECT_FALSE(*store.recorded_parent("boot-b", 4242, 9000));
  EXPECT_FALSE(*store.idle_since("boot-a", 4242, 9001));
  // Busy after idle: not idle now.
  HistoryEvent busy_again = holder_event(HistoryEventKind::kActivityChanged, 1050, p);
  busy_again.detail = "busy (SM 12%, memory 0%)";
  ASSERT_TRUE(store.append({busy_again}).ok());
  EXPECT_FALSE(*store.idle_since("boot-a", 4242, 9000));
}

TEST_F(EventStoreTest, IdleSinceAndTheParentReadTheNewestWhateverCameBefore) {
  // Issue 49: both read the process's events through the timeline query, PID-only and oldest
  // first under its 100,000-event LIMIT: with more events before, the newest were never read
  // (on 0cc3abe this test's idle_since was nullopt — the busy change before the flood — and
  // status --db said idle for the wrong time).
  EventStore store = writer();
  const RecordedProcess p = server(4242, 9000);
  RecordedProcess earlier = server(4242, 100);  // the PID's earlier process, the same boot
  std::vector<HistoryEvent> flood;
  HistoryEvent busy = holder_event(HistoryEventKind::kActivityChanged, 1, p);
  busy.detail = "busy (SM 90%, memory 10%)";
  flood.push_back(busy);
  for (int i = 0; i < 100'001; ++i) {
    flood.push_back(memory_event(2 + i * 0.001, (i % 2) != 0 ? p : earlier, 0, Bytes(i) << 20));
  }
  HistoryEvent orphaned = holder_event(HistoryEventKind::kClassChanged, 200, p);
  orphaned.klass = "orphan";
  HistoryEvent idle = holder_event(HistoryEventKind::kActivityChanged, 300, p);
  idle.detail = "idle";
  flood.push_back(orphaned);
  flood.push_back(idle);
  ASSERT_TRUE(store.append(flood).ok());
  auto since = store.idle_since("boot-a", 4242, 9000);
  ASSERT_TRUE(since.ok()) << since.error().message();
  EXPECT_EQ(*since, std::optional<double>(300));
  auto parent = store.recorded_parent("boot-a", 4242, 9000);
  ASSERT_TRUE(parent.ok() && parent->has_value());
  EXPECT_EQ((*parent)->pid, 100);
  EXPECT_EQ((*parent)->gone_by, std::optional<double>(200));
  // Negative controls: the PID's other process has no activity, and a busy change after the
  // idle one makes it busy again.
  EXPECT_EQ(*store.idle_since("boot-a", 4242, 100), std::nullopt);
  HistoryEvent again = busy;
  again.time = 400;
  ASSERT_TRUE(store.append({again}).ok());
  EXPECT_EQ(*store.idle_since("boot-a", 4242, 9000), std::nullopt);
}

TEST_F(EventStoreTest, NoCachedRowIdOutlivesAPrune) {
  // Issue 49: after retention pruned a quiet process (and its boot and command rows), their
  // ids were free again and the writer's cache still held them: the next event of the pruned
  // process landed on the row of a process stored since (on 0cc3abe this test read pid 200,
  // boot-b, for A's event).
  EventStore store = writer();
  const RecordedProcess a = server(100, 10);
  RecordedProcess b = server(200, 20);
  b.boot_id = "boot-b";
  b.argv = {"bob's", "job"};
  ASSERT_TRUE(store.append({holder_event(HistoryEventKind::kAppeared, 1, a)}).ok());
  auto pruned = store.prune(2, 1ULL << 40);
  ASSERT_TRUE(pruned.ok()) << pruned.error().message();
  ASSERT_EQ(*pruned, 1u);
  ASSERT_TRUE(store.append({holder_event(HistoryEventKind::kAppeared, 3, b)}).ok());
  ASSERT_TRUE(store.append({holder_event(HistoryEventKind::kLeft, 4, a)}).ok());
  auto events = store.events({});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  ASSERT_TRUE(events->at(1).process.has_value());
  EXPECT_EQ(events->at(1).process->pid, 100);
  EXPECT_EQ(events->at(1).process->boot_id, "boot-a");
  EXPECT_EQ(events->at(1).process->argv, a.argv);
  // Negative control: B's own event is still B's.
  EXPECT_EQ(events->at(0).process->pid, 200);
  EXPECT_EQ(events->at(0).process->boot_id, "boot-b");
}

TEST_F(EventStoreTest, ADirectoryOtherUsersCanWriteIsRefused) {
  // Issue 49: the --db directory's owner and mode were not looked at (on 0cc3abe both opens
  // below succeeded): another user could plant the -wal file or swap the database.
  const std::string shared = dir_.path() + "/shared";
  std::filesystem::create_directories(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  auto refused = EventStore::open(shared + "/history.db", false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("writable by other users"), std::string::npos)
      << refused.error().message();
  EXPECT_FALSE(std::filesystem::exists(shared + "/history.db")) << "nothing was created there";
  if (::geteuid() == 0) {
    const std::string theirs = dir_.path() + "/theirs";
    std::filesystem::create_directories(theirs);
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    ASSERT_EQ(::chmod(theirs.c_str(), 0700), 0);
    auto not_ours = EventStore::open(theirs + "/history.db", false);
    ASSERT_FALSE(not_ours.ok());
    EXPECT_NE(not_ours.error().message().find("belongs to uid 65534"), std::string::npos)
        << not_ours.error().message();
  }
  // Negative control: the same directory made the owner's alone is used.
  ASSERT_EQ(::chmod(shared.c_str(), 0755), 0);
  EXPECT_TRUE(EventStore::open(shared + "/history.db", false).ok());
}

TEST_F(EventStoreTest, AUsersFloodOfBigCommandLinesErasesOnlyItself) {
  // Issue 49: with the size cap reached, pruning deleted the oldest events whoever wrote them:
  // 40 short-lived holders of one user with distinct 1 MiB command lines in a 16 MiB database
  // erased the recorder's start and a root holder's record. On 0cc3abe the 40 took 84 MB (no
  // cap); with the cap but oldest-first pruning, the recorder's, root's and alice's went.
  EventStore store = writer();
  HistoryEvent started;
  started.kind = HistoryEventKind::kRecorderStarted;
  started.time = 1;
  started.detail = "watching";
  RecordedProcess root_job = server(100, 10);
  root_job.user = "root";
  ASSERT_TRUE(store.append({started, holder_event(HistoryEventKind::kAppeared, 2, root_job)}).ok());
  RecordedProcess alice_job = server(150, 15);
  ASSERT_TRUE(store.append({holder_event(HistoryEventKind::kAppeared, 3, alice_job)}).ok());
  for (int i = 0; i < 40; ++i) {
    RecordedProcess flood = server(1000 + i, 100 + static_cast<std::uint64_t>(i));
    flood.user = "nobody";
    flood.argv = {"x", std::string(1 << 20, static_cast<char>('a' + i % 26)) + std::to_string(i)};
    ASSERT_TRUE(store
                    .append({holder_event(HistoryEventKind::kAppeared, 10 + i, flood),
                             holder_event(HistoryEventKind::kLeft, 10.5 + i, flood)})
                    .ok());
  }
  // What one process stores is capped: 40 of them take far less than 40 MiB.
  auto size = store.data_bytes();
  ASSERT_TRUE(size.ok());
  EXPECT_LT(*size, 2ull << 20) << "each command line is capped at a few KiB";
  auto flood_events = store.events({.pid = 1000});
  ASSERT_TRUE(flood_events.ok() && !flood_events->empty());
  const std::vector<std::string>& argv = flood_events->front().process->argv;
  ASSERT_EQ(argv.size(), 3u);
  EXPECT_NE(argv.back().find("1048579 bytes in all, fnv1a "), std::string::npos) << argv.back();
  // Over a limit, the flooding user's events go first; the recorder's and root's stay.
  auto pruned = store.prune(0, *size / 2);
  ASSERT_TRUE(pruned.ok()) << pruned.error().message();
  EXPECT_GT(*pruned, 0u);
  auto left = store.events({});
  ASSERT_TRUE(left.ok());
  bool recorder_kept = false;
  bool root_kept = false;
  bool alice_kept = false;
  for (const HistoryEvent& e : *left) {
    recorder_kept |= e.kind == HistoryEventKind::kRecorderStarted;
    root_kept |= e.process && e.process->user == "root";
    alice_kept |= e.process && e.process->pid == 150;
  }
  EXPECT_TRUE(recorder_kept);
  EXPECT_TRUE(root_kept);
  EXPECT_TRUE(alice_kept) << "another user's record is not the flood's to erase either";
  // Negative control: the flood itself was pruned, oldest first.
  auto first_flood = store.events({.pid = 1000});
  ASSERT_TRUE(first_flood.ok());
  EXPECT_TRUE(first_flood->empty());
}

TEST_F(EventStoreTest, TheTimelineIsNarrowedByTimeAndGpu) {
  EventStore store = writer();
  const RecordedProcess p = server(10, 1);
  ASSERT_TRUE(store
                  .append({holder_event(HistoryEventKind::kAppeared, 100, p),
                           memory_event(100, p, 0, 1 << 20), memory_event(200, p, 1, 2 << 20),
                           holder_event(HistoryEventKind::kLeft, 300, p)})
                  .ok());
  EXPECT_EQ(store.events({.since = 150})->size(), 2u);
  EXPECT_EQ(store.events({.since = 100, .until = 300})->size(), 3u) << "until is exclusive";
  // GPU 1: its memory event, and the holder events that name no GPU.
  auto gpu1 = store.events({.gpu = 1});
  ASSERT_EQ(gpu1->size(), 3u);
  EXPECT_EQ(gpu1->at(1).bytes, 2u << 20);
}

// Issue 52: what history --report reads. An orphaned server's events from its first (its
// appearance before the orphaning too) and its child's (a dead job is a tree), the node's
// unattributed memory, actions and the
// recorder's starts, in time order; an active holder's and an Xid's are not read (negative
// control: they are in the database), nor anything from `until` on.
TEST_F(EventStoreTest, TheLeftoverReportReadsTheLeftoversEventsAndTheNodesOwn) {
  EventStore store = writer();
  const RecordedProcess orphan = server(10, 1);
  const RecordedProcess active = server(20, 2);
  RecordedProcess worker = server(30, 3);  // the orphan's child: of its dead job
  worker.parent_pid = 10;
  worker.parent_start_ticks = 1;
  HistoryEvent orphaned = holder_event(HistoryEventKind::kClassChanged, 150, orphan);
  orphaned.klass = "orphan";
  HistoryEvent appeared = holder_event(HistoryEventKind::kAppeared, 100, orphan);
  appeared.klass = "active";
  HistoryEvent other = holder_event(HistoryEventKind::kAppeared, 100, active);
  other.klass = "active";
  const auto node_event = [](HistoryEventKind kind, double time) {
    HistoryEvent event;
    event.kind = kind;
    event.time = time;
    event.gpu = 0;
    return event;
  };
  ASSERT_TRUE(
      store
          .append({node_event(HistoryEventKind::kRecorderStarted, 90), appeared, other,
                   memory_event(100, orphan, 0, 1 << 20), orphaned,
                   memory_event(160, active, 0, 1 << 20), memory_event(165, worker, 1, 1 << 20),
                   node_event(HistoryEventKind::kUnattributedAppeared, 170),
                   node_event(HistoryEventKind::kXid, 180),
                   node_event(HistoryEventKind::kAction, 190),
                   holder_event(HistoryEventKind::kLeft, 200, orphan),
                   node_event(HistoryEventKind::kUnattributedCleared, 300)})
          .ok());
  ASSERT_EQ(store.events({})->size(), 12u);
  std::vector<std::string> read;
  ASSERT_TRUE(store
                  .each_leftover_event(
                      300,
                      [&read](const HistoryEvent& e) {
                        read.push_back(std::string(to_string(e.kind)) + "@" +
                                       std::to_string(static_cast<int>(e.time)) +
                                       (e.process ? " pid " + std::to_string(e.process->pid) : ""));
                      })
                  .ok());
  EXPECT_EQ(read, (std::vector<std::string>{
                      "recorder_started@90", "appeared@100 pid 10", "memory_changed@100 pid 10",
                      "class_changed@150 pid 10", "memory_changed@165 pid 30",
                      "unattributed_appeared@170", "action@190", "left@200 pid 10"}));
  // Orphaned at 150: up to 140 it was no leftover, so nothing of it is read.
  read.clear();
  ASSERT_TRUE(store
                  .each_leftover_event(140,
                                       [&read](const HistoryEvent& e) {
                                         if (e.process)
                                           read.push_back(std::to_string(e.process->pid));
                                       })
                  .ok());
  EXPECT_TRUE(read.empty());

  // A database written before the index of parents (dropped here, by hand): the leftovers
  // alone are read, and the store says so (history --report tells its reader); a recorder of
  // this gpuclean makes the index again when it opens the file.
  EXPECT_TRUE(store.indexes_parents());
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "DROP INDEX processes_by_parent", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  auto reader = EventStore::open(path_, true);
  ASSERT_TRUE(reader.ok()) << reader.error().message();
  EXPECT_FALSE(reader->indexes_parents());
  std::vector<Pid> pids;
  ASSERT_TRUE(reader
                  ->each_leftover_event(300,
                                        [&pids](const HistoryEvent& e) {
                                          if (e.process) pids.push_back(e.process->pid);
                                        })
                  .ok());
  EXPECT_EQ(std::count(pids.begin(), pids.end(), 30), 0) << "the worker is not followed";
  EXPECT_GT(std::count(pids.begin(), pids.end(), 10), 0) << "the orphan still is";
  EXPECT_TRUE(writer().indexes_parents()) << "the writer makes it again";
}

TEST_F(EventStoreTest, WhoHeldAGpuAtAMomentAndWhatIsStillOpenAfterARestart) {
  const RecordedProcess early = server(10, 1);
  RecordedProcess late = server(20, 2);
  RecordedProcess other_boot = server(30, 3);
  other_boot.boot_id = "boot-b";
  {
    EventStore store = writer();
    HistoryEvent appeared = holder_event(HistoryEventKind::kAppeared, 100, early);
    appeared.klass = "active";
    HistoryEvent orphaned = holder_event(HistoryEventKind::kClassChanged, 150, early);
    orphaned.klass = "orphan";
    ASSERT_TRUE(store
                    .append({appeared, memory_event(100, early, 0, 4 << 20),
                             memory_event(140, early, 0, 8 << 20), orphaned,
                             holder_event(HistoryEventKind::kAppeared, 200, late),
                             holder_event(HistoryEventKind::kLeft, 250, early),
                             holder_event(HistoryEventKind::kAppeared, 260, other_boot)})
                    .ok());
  }
  // Reopened, as a restarted recorder would.
  EventStore store = writer();
  auto at_145 = store.held_at(145);
  ASSERT_TRUE(at_145.ok()) << at_145.error().message();
  ASSERT_EQ(at_145->size(), 1u);
  EXPECT_EQ(at_145->at(0).process.pid, 10);
  EXPECT_EQ(at_145->at(0).klass, "active") << "the orphaning came at 150";
  EXPECT_EQ(at_145->at(0).gpu_memory.at(0), 8u << 20) << "its latest memory by then";
  EXPECT_EQ(store.held_at(160)->at(0).klass, "orphan");
  ASSERT_EQ(store.held_at(220)->size(), 2u);
  ASSERT_EQ(store.held_at(255)->size(), 1u) << "pid 10 left at 250";

  auto open_a = store.still_open("boot-a");
  ASSERT_TRUE(open_a.ok());
  ASSERT_EQ(open_a->size(), 1u);
  EXPECT_EQ(open_a->at(0).process.pid, 20);
  EXPECT_EQ(store.still_open("boot-b")->size(), 1u) << "another boot's own";

  // Appending the same identity again refers to the same process row.
  ASSERT_TRUE(store.append({memory_event(300, late, 0, 1 << 20)}).ok());
  EXPECT_EQ(store.events({.pid = 20})->size(), 2u);
}

TEST_F(EventStoreTest, PruningByAgeAndBySizeKeepsTheNewest) {
  EventStore store = writer();
  std::vector<HistoryEvent> batch;
  for (int i = 0; i < 20000; ++i) {
    HistoryEvent event =
        holder_event(HistoryEventKind::kAppeared, i, server(1000 + i, static_cast<unsigned>(i)));
    event.detail = std::string(64, 'x');
    batch.push_back(event);
  }
  ASSERT_TRUE(store.append(batch).ok());
  auto deleted = store.prune(5000, 1ULL << 40);
  ASSERT_TRUE(deleted.ok()) << deleted.error().message();
  EXPECT_EQ(*deleted, 5000u);
  EXPECT_EQ(store.events({})->front().time, 5000);
  EXPECT_EQ(store.events({.until = 5000})->size(), 0u);

  auto before = store.data_bytes();
  ASSERT_TRUE(before.ok());
  const std::uint64_t limit = *before / 3;
  ASSERT_TRUE(store.prune(0, limit).ok());
  EXPECT_LE(*store.data_bytes(), limit);
  auto kept = store.events({});
  ASSERT_FALSE(kept->empty());
  EXPECT_EQ(kept->back().time, 19999) << "the newest event stays";
  EXPECT_GT(kept->front().time, 5000) << "the oldest went first";
  // The file itself shrank: pruned pages are given back (auto_vacuum incremental).
  EXPECT_LT(std::filesystem::file_size(path_), *before);
}

// Over --max-size, a prune goes down to 95% of it: the next looks' events fit without another
// prune. On cd452cf a prune stopped just under the limit, so a full database was pruned again
// after nearly every write, each prune a GROUP BY over every event (bench/recorder_bench.sh).
TEST_F(EventStoreTest, AFullDatabaseIsPrunedWithRoomToSpare) {
  EventStore store = writer();
  auto batch_of = [](int first, int n) {
    std::vector<HistoryEvent> batch;
    for (int i = first; i < first + n; ++i) {
      HistoryEvent event =
          holder_event(HistoryEventKind::kAppeared, i, server(1000 + i, static_cast<unsigned>(i)));
      event.detail = std::string(64, 'x');
      batch.push_back(event);
    }
    return batch;
  };
  ASSERT_TRUE(store.append(batch_of(0, 20000)).ok());
  const std::uint64_t limit = *store.data_bytes() / 2;
  ASSERT_TRUE(store.prune(0, limit).ok());
  EXPECT_LE(*store.data_bytes(), limit * 95 / 100);
  // 2% more data: still under the limit, nothing to prune.
  ASSERT_TRUE(store.append(batch_of(20000, 200)).ok());
  auto again = store.prune(0, limit);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0u);
  // Negative control: past the limit again, it prunes.
  ASSERT_TRUE(store.append(batch_of(20200, 2000)).ok());
  EXPECT_GT(*store.prune(0, limit), 0u);
}

TEST_F(EventStoreTest, TheFileIsTheRecordersAlone) {
  EventStore store = writer();
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir_.path() + "/var").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(EventStoreTest, ASymlinkIsRefusedAndItsTargetUntouched) {
  const std::string target = dir_.file("elsewhere");
  const std::string link = dir_.path() + "/history.db";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  auto store = EventStore::open(link, false);
  EXPECT_FALSE(store.ok());
  EXPECT_EQ(std::filesystem::file_size(target), 0u) << "nothing was written through the link";
  EXPECT_FALSE(EventStore::open(link, true).ok()) << "readers do not follow it either";
  // Negative control: the same open on a plain path works.
  EXPECT_TRUE(EventStore::open(dir_.path() + "/plain.db", false).ok());
}

TEST_F(EventStoreTest, ANonDatabaseOrANewerSchemaIsSaidAndLeftAlone) {
  const std::string junk = dir_.path() + "/junk.db";
  {
    std::ofstream out(junk);
    out << std::string(8192, 'j');
  }
  auto store = EventStore::open(junk, false);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message().find("is not a gpuclean history database"), std::string::npos)
      << store.error().message();
  EXPECT_EQ(std::filesystem::file_size(junk), 8192u) << "the file was left as it was";

  { EventStore fresh = writer(); }
  // A later gpuclean's file: its version written behind the store's back.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version = 2", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  auto newer = EventStore::open(path_, true);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.error().message().find("newer than this gpuclean's"), std::string::npos)
      << newer.error().message();
}

TEST_F(EventStoreTest, ADatabaseThatCannotBeMadeOrIsMissingIsAnError) {
  // Its directory cannot be made (a file is in the way): an error that says so, root or not.
  const std::string blocked = dir_.file("not-a-directory") + "/history.db";
  auto store = EventStore::open(blocked, false);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message().find("history directory"), std::string::npos)
      << store.error().message();
  // A reader creates nothing: a missing database is said.
  auto missing = EventStore::open(dir_.path() + "/none.db", true);
  EXPECT_FALSE(missing.ok());
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/none.db"));
}

}  // namespace
}  // namespace gpuclean::history
