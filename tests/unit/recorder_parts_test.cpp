// The flight recorder's pure parts: who forked whom from process events (recorder/lineage.h),
// the moments and sizes its commands take (core/wall_time.h, core/units.h), the journal's
// native protocol (recorder/journal.h) and the history's text (output/history_view.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/run_record.h"
#include "core/units.h"
#include "core/wall_time.h"
#include "output/history_view.h"
#include "recorder/journal.h"
#include "recorder/lineage.h"
#include "recorder/proc_events.h"
#include "recorder/recorder.h"

namespace gpuclean {
namespace {

using recorder::Lineage;

TEST(Lineage, AParentThatExitedIsNamedWhileItsChildLivesAndForgottenAfter) {
  Lineage lineage;
  lineage.known(100, 5, {"bash", "run_server.sh", "--tp", "8"});
  lineage.forked(200, 100, 50);  // the launcher forks the server ...
  lineage.execed(200, {"python3", "serve.py"});
  lineage.exited(100, 1000.5);  // ... and dies
  auto parent = lineage.parent_of(200, 50);
  ASSERT_TRUE(parent);
  EXPECT_EQ(parent->pid, 100);
  EXPECT_EQ(parent->argv, (std::vector<std::string>{"bash", "run_server.sh", "--tp", "8"}));
  EXPECT_EQ(parent->exit_time, 1000.5);
  EXPECT_EQ(parent->start_ticks, 5u);
  EXPECT_EQ(lineage.size(), 2u);
  // The child exits: nothing needs either entry any more.
  lineage.exited(200, 1001);
  EXPECT_EQ(lineage.size(), 0u);
}

TEST(Lineage, AForkWithoutExecRunsItsForkersArgv) {
  Lineage lineage;
  lineage.known(100, 5, {"python3", "launch.py"});
  lineage.forked(200, 100, 60);  // multiprocessing's fork: no exec
  lineage.forked(300, 200, 70);
  lineage.exited(200, 10);
  auto parent = lineage.parent_of(300, 70);
  ASSERT_TRUE(parent);
  EXPECT_EQ(parent->pid, 200);
  EXPECT_EQ(parent->argv, (std::vector<std::string>{"python3", "launch.py"}));
}

TEST(Lineage, AReusedPidIsAnotherProcess) {
  Lineage lineage;
  lineage.known(100, 5, {"bash"});
  lineage.forked(200, 100, 50);
  // Asked about a process 200 that started long after that fork: not the one seen.
  EXPECT_FALSE(lineage.parent_of(200, 50 + 100));
  EXPECT_TRUE(lineage.parent_of(200, 50 + Lineage::kTicksTolerance));
  // The PID is reused by a fork of someone else: the new entry replaces the old.
  lineage.exited(200, 1);
  lineage.known(400, 6, {"other"});
  lineage.forked(200, 400, 900);
  auto parent = lineage.parent_of(200, 900);
  ASSERT_TRUE(parent);
  EXPECT_EQ(parent->pid, 400);
  // Negative control: a process never seen forked has no parent from the events.
  EXPECT_FALSE(lineage.parent_of(999, 1));
}

TEST(Lineage, AParentsPidHandedOnNamesNoOtherProcess) {
  // Issue 48 item 2's hole in the recorder: the launcher forks the server and dies; its PID
  // goes to another process. Before, the orphan's parent was named with the newcomer's argv
  // and start time (on f0b45f5 this test read {"evil"} and 900).
  Lineage lineage;
  lineage.known(100, 5, {"bash", "run_server.sh"});
  lineage.forked(200, 100, 50);
  lineage.exited(100, 1000.5);
  lineage.known(7, 1, {"init"});
  lineage.forked(100, 7, 900);  // PID 100 handed on
  lineage.execed(100, {"evil"});
  auto parent = lineage.parent_of(200, 50);
  ASSERT_TRUE(parent);
  EXPECT_EQ(parent->pid, 100);
  EXPECT_EQ(parent->start_ticks, 5u) << "the parent that forked it, not the newcomer";
  EXPECT_TRUE(parent->argv.empty()) << "the newcomer's argv is not the parent's";
  // The child's exit does not take a child away from the newcomer's entry.
  lineage.forked(101, 100, 901);  // the newcomer's own child
  lineage.exited(200, 1001);
  auto newcomer_child = lineage.parent_of(101, 901);
  ASSERT_TRUE(newcomer_child);
  EXPECT_EQ(newcomer_child->argv, (std::vector<std::string>{"evil"}));
  // Negative control: while the PID is the parent's own, it is named in full (the first test).
}

TEST(Lineage, AForkAfterASuspendIsMatchedToItsChildsProcStart) {
  // The fork event is stamped on CLOCK_MONOTONIC, /proc's start on CLOCK_BOOTTIME: after an
  // hour suspended they are an hour apart. On cd452cf the event's ticks were the timestamp
  // alone (the negative control below), and the orphan's parent went unnamed.
  constexpr long kHz = 100;
  constexpr std::uint64_t kSecond = 1000000000ULL;
  constexpr std::uint64_t kSuspended = 3600 * kSecond;
  const std::uint64_t fork_stamp = 5000 * kSecond + 3;         // monotonic
  const std::uint64_t child_proc_start = (5000 + 3600) * kHz;  // /proc/CHILD/stat, boottime
  Lineage lineage;
  lineage.known(100, 7, {"bash", "run_server.sh"});
  lineage.forked(200, 100, recorder::event_start_ticks(fork_stamp, kSuspended, kHz));
  const auto parent = lineage.parent_of(200, child_proc_start);
  ASSERT_TRUE(parent);
  EXPECT_EQ(parent->argv, (std::vector<std::string>{"bash", "run_server.sh"}));

  Lineage without_the_gap;
  without_the_gap.known(100, 7, {"bash", "run_server.sh"});
  without_the_gap.forked(200, 100, recorder::event_start_ticks(fork_stamp, 0, kHz));
  EXPECT_FALSE(without_the_gap.parent_of(200, child_proc_start));
  // And the gap as this machine measures it is boottime less monotonic: never negative.
  EXPECT_LT(recorder::suspended_ns_now(), std::uint64_t{1} << 62);
}

TEST(Lineage, ItsSizeIsBounded) {
  Lineage lineage;
  lineage.known(1, 1, {"init"});
  for (Pid pid = 2; pid < static_cast<Pid>(Lineage::kMaxEntries) + 10; ++pid) {
    lineage.forked(pid, 1, 2);
  }
  EXPECT_EQ(lineage.size(), Lineage::kMaxEntries);
  EXPECT_GT(lineage.dropped(), 0u);
}

TEST(WallTime, MomentsAsUsersTypeThem) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  const double now = 1796385600;  // 2026-12-04 12:00:00 UTC
  EXPECT_EQ(*parse_time_point("2h", now), now - 7200);
  EXPECT_EQ(*parse_time_point("7d", now), now - 7 * 86400);
  EXPECT_EQ(*parse_time_point("@1796380000", now), 1796380000);
  EXPECT_EQ(*parse_time_point("2026-12-04 10:07", now), 1796385600 - 2 * 3600 + 7 * 60);
  EXPECT_EQ(*parse_time_point("2026-12-04T10:07:30", now), 1796385600 - 2 * 3600 + 7 * 60 + 30);
  EXPECT_EQ(*parse_time_point("10:07", now), 1796385600 - 2 * 3600 + 7 * 60) << "today";
  EXPECT_EQ(*parse_time_point("2026-12-04", now), 1796385600 - 12 * 3600);
  for (const char* bad :
       {"", "yesterday", "25:00", "2026-13-01", "2026-12-04 10", "@-5", "@1x", "10:07pm"}) {
    EXPECT_FALSE(parse_time_point(bad, now).ok()) << bad;
  }
  EXPECT_EQ(format_local_time(1796385600), "2026-12-04 12:00:00");
}

TEST(Units, SizesAsUsersTypeThem) {
  EXPECT_EQ(*parse_size("256MiB"), Bytes{256} << 20);
  EXPECT_EQ(*parse_size("256M"), Bytes{256} << 20);
  EXPECT_EQ(*parse_size("1.5GiB"), Bytes{3} << 29);
  EXPECT_EQ(*parse_size("4096"), 4096u);
  for (const char* bad : {"", "MiB", "-1M", "12 parsecs", "0x10", "nan", "1e30G"}) {
    EXPECT_FALSE(parse_size(bad).ok()) << bad;
  }
}

TEST(Journal, FieldsInTheNativeProtocolWithNewlinesInTheBinaryForm) {
  const std::string datagram =
      recorder::journal_datagram({{"GPUCLEAN_EVENT", "appeared"}, {"GPUCLEAN_ARGV", "a\nb"}});
  const std::string binary =
      std::string("GPUCLEAN_ARGV\n") + std::string("\x03\0\0\0\0\0\0\0", 8) + "a\nb\n";
  EXPECT_EQ(datagram, "GPUCLEAN_EVENT=appeared\n" + binary);

  HistoryEvent event;
  event.kind = HistoryEventKind::kAppeared;
  event.process = RecordedProcess{.boot_id = "b",
                                  .pid = 42,
                                  .start_ticks = 7,
                                  .user = "alice",
                                  .argv = {"python3", "evil\x1b[2J"},
                                  .owner = "slurm-job:4242",
                                  .parent_pid = 41,
                                  .parent_start_ticks = 6,
                                  .parent_argv = {"bash"}};
  event.gpu = 3;
  const recorder::JournalFields fields = recorder::journal_fields(event);
  auto value = [&fields](const std::string& key) {
    for (const auto& [k, v] : fields) {
      if (k == key) return v;
    }
    return std::string("<absent>");
  };
  EXPECT_EQ(value("GPUCLEAN_PID"), "42");
  EXPECT_EQ(value("GPUCLEAN_GPU"), "3");
  EXPECT_EQ(value("GPUCLEAN_OWNER"), "slurm-job:4242");
  EXPECT_EQ(value("GPUCLEAN_PARENT_PID"), "41");
  EXPECT_EQ(value("GPUCLEAN_ARGV").find('\x1b'), std::string::npos) << "escaped";
  // What a user sent reaches the journal escaped: a right-to-left override and a line
  // separator in an action's text went through raw (issue 49; on 0cc3abe both were there).
  HistoryEvent action;
  action.kind = HistoryEventKind::kAction;
  action.detail =
      "{\"text\": \"rm -rf \xe2\x80\xae/ \xe2\x80\xa8"
      "forged line\"}";
  const recorder::JournalFields action_fields = recorder::journal_fields(action);
  std::string detail;
  for (const auto& [k, v] : action_fields) {
    if (k == "GPUCLEAN_DETAIL") detail = v;
  }
  EXPECT_EQ(detail.find("\xe2\x80\xae"), std::string::npos) << detail;
  EXPECT_EQ(detail.find("\xe2\x80\xa8"), std::string::npos) << detail;
  EXPECT_NE(detail.find("forged line"), std::string::npos) << "the rest is kept: " << detail;
}

// An entry over the datagram limit goes to journald in a sealed memfd, the fd sent alone (the
// native protocol's rule for big entries); on cd452cf the send failed with EMSGSIZE and the
// entry was lost. The receiver is this test's own socket, standing in for journald's.
TEST(Journal, AnEntryTooBigForADatagramGoesInASealedMemfd) {
  const std::string path = ::testing::TempDir() + "journal-" + std::to_string(::getpid());
  ::unlink(path.c_str());
  const int journald = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(journald, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  ASSERT_EQ(::bind(journald, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  recorder::JournalSink sink(path);
  ASSERT_TRUE(sink.connected());
  // Receives one entry: its bytes, from the datagram or from the memfd sent with it.
  auto receive = [journald](bool& in_memfd) {
    std::string bytes(std::size_t{1} << 16, '\0');
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    iovec part{bytes.data(), bytes.size()};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    const ssize_t n = ::recvmsg(journald, &message, MSG_DONTWAIT);
    const cmsghdr* header = CMSG_FIRSTHDR(&message);
    in_memfd = n == 0 && header != nullptr && header->cmsg_type == SCM_RIGHTS;
    if (!in_memfd) return bytes.substr(0, n > 0 ? static_cast<std::size_t>(n) : 0);
    int fd = -1;
    std::memcpy(&fd, CMSG_DATA(header), sizeof(fd));
    EXPECT_EQ(::fcntl(fd, F_GET_SEALS) & F_SEAL_WRITE, F_SEAL_WRITE) << "journald wants it sealed";
    std::string entry(static_cast<std::size_t>(::lseek(fd, 0, SEEK_END)), '\0');
    EXPECT_EQ(::pread(fd, entry.data(), entry.size(), 0), static_cast<ssize_t>(entry.size()));
    ::close(fd);
    return entry;
  };
  const recorder::JournalFields big = {{"MESSAGE", "big"},
                                       {"GPUCLEAN_DETAIL", std::string(1 << 20, 'x')}};
  ASSERT_TRUE(sink.send(big));
  bool in_memfd = false;
  EXPECT_EQ(receive(in_memfd), recorder::journal_datagram(big));
  EXPECT_TRUE(in_memfd);
  // Negative control: a small entry is a datagram of its own.
  const recorder::JournalFields small = {{"MESSAGE", "small"}};
  ASSERT_TRUE(sink.send(small));
  EXPECT_EQ(receive(in_memfd), recorder::journal_datagram(small));
  EXPECT_FALSE(in_memfd);
  ::close(journald);
  ::unlink(path.c_str());
}

// Issue 51: the journal's command lines are joined as everywhere else (core's display_argv):
// one argument "a b" and two, a and b, read differently. Failed before: both were "a b".
TEST(Journal, OneArgumentWithASpaceIsNotTwoArguments) {
  const auto fields_of = [](std::vector<std::string> argv) {
    HistoryEvent event;
    event.kind = HistoryEventKind::kAppeared;
    event.process = RecordedProcess{.boot_id = "b",
                                    .pid = 42,
                                    .start_ticks = 7,
                                    .user = "alice",
                                    .argv = std::move(argv),
                                    .owner = "",
                                    .parent_pid = 41,
                                    .parent_start_ticks = 6,
                                    .parent_argv = {"a b"}};
    std::map<std::string, std::string> fields;
    for (const auto& [key, value] : recorder::journal_fields(event)) fields[key] = value;
    return fields;
  };
  auto one = fields_of({"a b"});
  auto two = fields_of({"a", "b"});
  EXPECT_EQ(one["GPUCLEAN_ARGV"], "'a b'");
  EXPECT_EQ(two["GPUCLEAN_ARGV"], "a b");
  EXPECT_EQ(one["GPUCLEAN_PARENT_ARGV"], "'a b'");
  EXPECT_NE(one["MESSAGE"], two["MESSAGE"]);
  EXPECT_EQ(one["MESSAGE"], "gpuclean: appeared pid 42 'a b'");
}

#ifdef GPUCLEAN_METRICS_TESTS
// The recorder's health file, now serialised by prometheus-cpp as `metrics` is (issue 51): the
// same names, types, help and values as the text written by hand before.
TEST(RecorderHealth, IsPrometheusTextWithTheSameSeries) {
  recorder::RecorderHealth health;
  health.events_written = 12;
  health.looks = 3;
  health.last_write = 1796380000.25;
  health.proc_events = true;
  health.leftover_byte_seconds[{"orphan", "slurm-job"}] = 8589934592.0 * 60;
  const Result<std::string> text = recorder::render_health(health);
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_EQ(text->substr(0, text->find("# HELP gpuclean_recorder_pending_events")),
            "# HELP gpuclean_recorder_events_written_total Events the recorder wrote to its "
            "database.\n"
            "# TYPE gpuclean_recorder_events_written_total counter\n"
            "gpuclean_recorder_events_written_total 12\n"
            "# HELP gpuclean_recorder_events_dropped_total Events lost because the database "
            "failed longer than the memory queue holds.\n"
            "# TYPE gpuclean_recorder_events_dropped_total counter\n"
            "gpuclean_recorder_events_dropped_total 0\n");
  for (
      const std::string line :
      {"\ngpuclean_recorder_looks_total 3\n", "\ngpuclean_recorder_proc_events 1\n",
       "\n# TYPE gpuclean_recorder_proc_events gauge\n",
       "\ngpuclean_recorder_last_write_timestamp_seconds 1796380000.25\n",
       "\ngpuclean_recorder_proc_event_overruns_total 0\n",
       // Leftover memory over time: the series held, and every class with owner_kind "none"
       // from the start (increase() needs a series before the first leftover).
       "\n# TYPE gpuclean_recorder_leftover_memory_byte_seconds_total counter\n",
       "\ngpuclean_recorder_leftover_memory_byte_seconds_total{class=\"orphan\",owner_kind=\"slurm-"
       "job\"} 515396075520\n",
       "\ngpuclean_recorder_leftover_memory_byte_seconds_total{class=\"heir\",owner_kind=\"none\"} "
       "0\n",
       "\ngpuclean_recorder_leftover_memory_byte_seconds_total{class=\"unattributed\",owner_kind="
       "\"none\"} 0\n"}) {
    EXPECT_NE(text->find(line), std::string::npos) << line << "in:\n" << *text;
  }
  std::size_t series = 0;
  for (std::size_t at = text->find("# TYPE"); at != std::string::npos;
       at = text->find("# TYPE", at + 1)) {
    ++series;
  }
  EXPECT_EQ(series, 14U);
}
#endif

TEST(HistoryEvent, JsonNestingDepthCountsBracketsOutsideStrings) {
  EXPECT_EQ(json_nesting_depth(""), 0u);
  EXPECT_EQ(json_nesting_depth("{\"a\": [1, {\"b\": 2}]}"), 3u);
  EXPECT_EQ(json_nesting_depth("{\"a\": \"[[[[{{{{\\\"]]]\"}"), 1u) << "brackets in a string";
  EXPECT_EQ(json_nesting_depth(std::string(20000, '[') + std::string(20000, ']')), 20000u);
  EXPECT_EQ(json_nesting_depth("]]]]"), 0u);
}

TEST(HistoryView, CommandLinesAreEscapedAndOwnersNamed) {
  EXPECT_EQ(output::argv_text({"python3", "serve.py", "--name", "a b"}),
            "python3 serve.py --name 'a b'");
  EXPECT_EQ(output::argv_text({"evil\x1b[2J"}).find('\x1b'), std::string::npos);
  EXPECT_EQ(output::argv_text({}), "?");
  EXPECT_EQ(output::recorded_owner_text("slurm-job:4242"), "slurm job 4242");
  EXPECT_EQ(output::recorded_owner_text("gpuclean-run:77"), "gpuclean run 77");
}

// plot --history's data: memory per GPU stepped at each change, from who held what at the
// start; actions and Xids as labelled marks.
TEST(HistoryView, ATimelineAsARecordStepsTheMemoryAndMarksTheActions) {
  constexpr Bytes kGiB = Bytes{1} << 30;
  RecordedProcess server{.boot_id = "b",
                         .pid = 42,
                         .start_ticks = 7,
                         .user = "u",
                         .argv = {"python3"},
                         .owner = "",
                         .parent_pid = std::nullopt,
                         .parent_start_ticks = std::nullopt,
                         .parent_argv = {}};
  const std::vector<output::HistoryHolder> at_start = {{server, "active", {{0, 8 * kGiB}}}};
  std::vector<HistoryEvent> events(4);
  events[0].kind = HistoryEventKind::kMemoryChanged;
  events[0].time = 110;
  events[0].process = server;
  events[0].gpu = 0;
  events[0].bytes = 16 * kGiB;
  events[1].kind = HistoryEventKind::kAction;
  events[1].time = 120;
  events[1].detail = R"({"command":"kill","exit":0})";
  events[2].kind = HistoryEventKind::kLeft;
  events[2].time = 121;
  events[2].process = server;
  events[3].kind = HistoryEventKind::kUnattributedAppeared;
  events[3].time = 130;
  events[3].gpu = 1;
  events[3].bytes = 2 * kGiB;
  const RunRecord record = output::history_as_record(at_start, events, 100, 200);
  ASSERT_EQ(record.gpus.size(), 2u);
  std::vector<std::pair<double, Bytes>> gpu0;
  for (const RunSample& sample : record.samples) gpu0.emplace_back(sample.t, *sample.used[0]);
  EXPECT_EQ(gpu0, (std::vector<std::pair<double, Bytes>>{
                      {0, 8 * kGiB}, {10, 16 * kGiB}, {21, 0}, {30, 0}, {100, 0}}));
  EXPECT_EQ(*record.samples[3].used[1], 2 * kGiB) << "unattributed memory counts on its GPU";
  ASSERT_EQ(record.events.size(), 1u);
  EXPECT_EQ(record.events[0].detail, "kill (exit 0)");
  EXPECT_EQ(record.events[0].t, 20);
}

}  // namespace
}  // namespace gpuclean
