// Issue 52: the leftover gauge of one diagnosis, its integration over looks, and the textfile
// read back (diagnose/leftover_gauge.h). Figures are computed by hand in the comments.
#include "diagnose/leftover_gauge.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/units.h"
#include "output/metrics_view.h"

namespace gpuclean::diagnose {
namespace {

constexpr double kGaugeGiB = static_cast<double>(kGiB);
constexpr double kGaugeMiB = static_cast<double>(kMiB);

GpuReport gauge_gpu(unsigned index, Bytes unattributed) {
  GpuReport gpu;
  gpu.gpu.index = index;
  gpu.gpu.uuid = "GPU-" + std::to_string(index);
  gpu.unattributed = unattributed;
  return gpu;
}

Holder gauge_holder(Pid pid, HolderClass klass, std::map<unsigned, Bytes> memory) {
  Holder holder;
  holder.process.pid = pid;
  holder.process.user = "alice";
  holder.process.cmdline = {"python3", "train.py"};
  holder.klass = klass;
  holder.gpu_memory = std::move(memory);
  return holder;
}

// GPUs 0 and 1 selected; GPU 0 has 1 GiB nobody accounts for (above the recorder's 256 MiB
// floor), GPU 1 has 100 MiB (below it). An orphan of Slurm job 4242 with 8 GiB on GPU 0,
// 2 GiB on GPU 1 and 4 GiB on GPU 5 (not selected); an heir without owner with 4 GiB on GPU 1;
// an active holder with 20 GiB, a stuck one with 1 GiB, a foreign one with 3 GiB: not leftovers.
Diagnosis gauge_diagnosis() {
  Diagnosis d;
  d.gpus = {gauge_gpu(0, 1 * kGiB), gauge_gpu(1, 100 * kMiB)};
  Holder orphan =
      gauge_holder(42, HolderClass::kOrphan, {{0, 8 * kGiB}, {1, 2 * kGiB}, {5, 4 * kGiB}});
  Owner job;
  job.kind = Owner::Kind::kSlurmJob;
  job.id = "4242";
  job.step = "0";
  orphan.process.owner = job;
  Holder heir = gauge_holder(43, HolderClass::kHeir, {{1, 4 * kGiB}});
  Holder active = gauge_holder(44, HolderClass::kActive, {{0, 20 * kGiB}});
  active.process.owner = job;
  Holder stuck = gauge_holder(45, HolderClass::kStuck, {{0, 1 * kGiB}});
  Holder foreign = gauge_holder(900, HolderClass::kForeign, {{1, 3 * kGiB}});
  foreign.visible = false;
  d.holders = {orphan, heir, active, stuck, foreign};
  return d;
}

TEST(LeftoverGauge, LeftoversByClassAndOwnerKindAndUnattributedAboveTheFloor) {
  const LeftoverSeries gauge = leftover_gauge(gauge_diagnosis());
  const LeftoverSeries want = {
      {{"heir", "none"}, 4 * kGaugeGiB},
      {{"orphan", "none"}, 0},
      {{"orphan", "slurm-job"}, 10 * kGaugeGiB},  // 8 + 2 GiB; GPU 5 is not selected
      {{"unattributed", "none"}, 1 * kGaugeGiB},  // GPU 0's; GPU 1's 100 MiB is below the floor
      {{"zombie-leader", "none"}, 0},
  };
  EXPECT_EQ(gauge, want);  // and nothing else: no active, stuck or foreign series
}

TEST(LeftoverGauge, ADeadJobsWorkersCountWithItUnderItsClass) {
  // A dead job is a tree: the orphan's worker (active: its parent, the orphan, lives) with
  // 16 GiB on GPU 0, named among the orphan problem's descendants, counts with it; the active
  // holder of a live job (44) still does not.
  Diagnosis d = gauge_diagnosis();
  Holder worker = gauge_holder(46, HolderClass::kActive, {{0, 16 * kGiB}});
  d.holders.push_back(worker);
  Problem orphaned;
  orphaned.kind = ProblemKind::kOrphan;
  orphaned.pid = 42;
  orphaned.descendants = {46};
  d.problems.push_back(orphaned);
  const LeftoverSeries gauge = leftover_gauge(d);
  EXPECT_EQ(gauge.at({"orphan", "slurm-job"}), (10 + 16) * kGaugeGiB);  // the orphan's owner
  // Negative control: without the problem naming it, the worker is a live job's holder.
  d.problems.back().descendants.clear();
  EXPECT_EQ(leftover_gauge(d).at({"orphan", "slurm-job"}), 10 * kGaugeGiB);
}

TEST(LeftoverGauge, AnActiveHolderNeverCounts) {
  // Negative control of the class rule: the same holders, the orphan made active, counts 0
  // where it counted 10 GiB.
  Diagnosis d = gauge_diagnosis();
  d.holders[0].klass = HolderClass::kActive;
  const LeftoverSeries gauge = leftover_gauge(d);
  EXPECT_EQ(gauge.count({"orphan", "slurm-job"}), 0U);
  EXPECT_EQ(gauge.at({"orphan", "none"}), 0);
  EXPECT_EQ(gauge.at({"heir", "none"}), 4 * kGaugeGiB);
}

TEST(LeftoverGauge, TheFloorIsTheRecordersAndStrict) {
  Diagnosis d;
  d.gpus = {gauge_gpu(0, HistoryDiffOptions{}.unattributed_floor),
            gauge_gpu(1, HistoryDiffOptions{}.unattributed_floor + 1)};
  EXPECT_EQ(HistoryDiffOptions{}.unattributed_floor, 256 * kMiB);
  // At the floor is the driver's reserve; one byte above it counts.
  EXPECT_EQ(leftover_gauge(d).at({"unattributed", "none"}), 256 * kGaugeMiB + 1);
  EXPECT_EQ(leftover_gauge(d, 0).at({"unattributed", "none"}), 512 * kGaugeMiB + 1);
}

TEST(LeftoverGauge, WithoutGpusTheFourSeriesAreThereAtZero) {
  // No NVML: no GPU, no figure; the four classes still have their series, for increase().
  Diagnosis d = gauge_diagnosis();
  d.gpus.clear();
  d.holders.erase(d.holders.begin());  // the orphan of job 4242 ...
  d.holders.erase(d.holders.begin());  // ... and the heir
  const LeftoverSeries want = {{{"heir", "none"}, 0},
                               {{"orphan", "none"}, 0},
                               {{"unattributed", "none"}, 0},
                               {{"zombie-leader", "none"}, 0}};
  EXPECT_EQ(leftover_gauge(d), want);
}

TEST(LeftoverGauge, TheOwnerKindIsBoundedAndNeverTheId) {
  Diagnosis d;
  d.gpus = {gauge_gpu(0, 0)};
  Holder zl = gauge_holder(7, HolderClass::kZombieLeader, {{0, 3 * kGiB}});
  Owner container;
  container.kind = Owner::Kind::kContainer;
  container.id = "3f2a1b4c5d6e:with:colons";
  zl.process.owner = container;
  Holder orphan = gauge_holder(8, HolderClass::kOrphan, {{0, 1 * kGiB}});
  Owner raw;
  raw.kind = Owner::Kind::kCgroup;
  raw.id = "/user.slice/whatever \"a user\" named";
  orphan.process.owner = raw;
  d.holders = {zl, orphan};
  const LeftoverSeries gauge = leftover_gauge(d);
  EXPECT_EQ(gauge.at({"zombie-leader", "container"}), 3 * kGaugeGiB);
  EXPECT_EQ(gauge.at({"orphan", "cgroup"}), 1 * kGaugeGiB);
  EXPECT_EQ(gauge.size(), 6U);
}

LeftoverLook look_at(double time, LeftoverSeries bytes) {
  return LeftoverLook{time, std::move(bytes)};
}

TEST(LeftoverCounter, TheMemorySeenAtOneLookCountsUntilTheNext) {
  const LeftoverSeries start = {{{"orphan", "none"}, 1e12}, {{"unattributed", "none"}, 0}};
  const auto previous = look_at(
      1000, {{{"orphan", "none"}, 8 * kGaugeGiB}, {{"unattributed", "none"}, 512 * kGaugeMiB}});
  // 30 s later, whatever is held now: 8 GiB × 30 s = 257,698,037,760 byte-seconds more for the
  // orphans, 512 MiB × 30 s = 16,106,127,360 for unattributed memory.
  const LeftoverSeries after = add_leftover_look(start, previous, look_at(1030, {}));
  EXPECT_EQ(after.at({"orphan", "none"}), 1e12 + 257698037760.0);
  EXPECT_EQ(after.at({"unattributed", "none"}), 16106127360.0);
}

TEST(LeftoverCounter, ALeftRiemannSumOverThreeLooks) {
  // 8 GiB at t=0, 4 GiB at t=30, gone at t=60 (then nothing at t=90): 8×30 + 4×30 = 360 GiB·s.
  const LeftoverKey orphan{"orphan", "none"};
  LeftoverSeries totals;
  std::optional<LeftoverLook> last;
  for (const auto& [time, bytes] : std::vector<std::pair<double, double>>{
           {0, 8 * kGaugeGiB}, {30, 4 * kGaugeGiB}, {60, 0}, {90, 0}}) {
    const LeftoverLook now = look_at(time, {{orphan, bytes}});
    totals = add_leftover_look(totals, last, now);
    last = now;
  }
  EXPECT_EQ(totals.at(orphan), 360 * kGaugeGiB);
}

TEST(LeftoverCounter, SeriesAreNeverDroppedAndNewOnesStartAtZero) {
  const LeftoverSeries start = {{{"heir", "container"}, 5}};
  const auto previous = look_at(0, {{{"orphan", "pod"}, 2}});
  const LeftoverSeries after =
      add_leftover_look(start, previous, look_at(10, {{{"zombie-leader", "none"}, 7}}));
  const LeftoverSeries want = {{{"heir", "container"}, 5},       // kept, though gone
                               {{"orphan", "pod"}, 20},          // 2 B × 10 s
                               {{"zombie-leader", "none"}, 0}};  // new: from 0
  EXPECT_EQ(after, want);
  // Without a previous look (a server's first scan, a textfile run with nothing to read back):
  // nothing is added, every series of the look starts at 0.
  const LeftoverSeries first =
      add_leftover_look({}, std::nullopt, look_at(10, {{{"heir", "none"}, 7}}));
  EXPECT_EQ(first, (LeftoverSeries{{{"heir", "none"}, 0}}));
}

TEST(LeftoverCounter, AGapOverTenMinutesAddsNothing) {
  const LeftoverSeries start = {{{"orphan", "none"}, 100}};
  const auto previous = look_at(5000, {{{"orphan", "none"}, 2}});
  // 600 s is the longest gap counted: 2 B × 600 s.
  EXPECT_EQ(add_leftover_look(start, previous, look_at(5600, {})).at({"orphan", "none"}), 1300);
  // Beyond it, unknown: the totals go on unchanged (not a reset).
  EXPECT_EQ(add_leftover_look(start, previous, look_at(5600.5, {})).at({"orphan", "none"}), 100);
  EXPECT_EQ(add_leftover_look(start, previous, look_at(90000, {})).at({"orphan", "none"}), 100);
  EXPECT_EQ(kLeftoverMaxGapSeconds, 600);
}

TEST(LeftoverCounter, ATimeGoingBackwardsAddsNothing) {
  const LeftoverSeries start = {{{"orphan", "none"}, 100}};
  const auto previous = look_at(5000, {{{"orphan", "none"}, 2}});
  EXPECT_EQ(add_leftover_look(start, previous, look_at(4999, {})).at({"orphan", "none"}), 100);
  EXPECT_EQ(add_leftover_look(start, previous, look_at(5000, {})).at({"orphan", "none"}), 100);
  // Negative control: the same look a second later counts.
  EXPECT_EQ(add_leftover_look(start, previous, look_at(5001, {})).at({"orphan", "none"}), 102);
}

// The file `metrics --textfile` writes, as gpuclean's own serializer writes it.
std::string written_textfile(const LeftoverSeries& bytes, const LeftoverSeries& totals,
                             double time) {
  output::MetricsReport report;
  report.status = StatusReport{};
  report.scan_time = time;
  report.version = "0.1.0";
  report.leftover_bytes = bytes;
  report.leftover_byte_seconds = totals;
  std::ostringstream out;
  output::render_metrics_text(out, report);
  return out.str();
}

const LeftoverSeries kWrittenBytes = {{{"heir", "none"}, 0},
                                      {{"orphan", "none"}, 0},
                                      {{"orphan", "slurm-job"}, 85899345920.0},
                                      {{"unattributed", "none"}, 641728512},
                                      {{"zombie-leader", "none"}, 0}};
const LeftoverSeries kWrittenTotals = {{{"heir", "none"}, 123456789012.5},
                                       {{"orphan", "none"}, 7.25e15},
                                       {{"orphan", "slurm-job"}, 2576980377600.0},
                                       {{"unattributed", "none"}, 19251855360.0},
                                       {{"zombie-leader", "none"}, 0}};

TEST(LeftoverRecord, WhatTheTextfileWroteIsReadBack) {
  const std::string text = written_textfile(kWrittenBytes, kWrittenTotals, 1796572157.586551);
  const auto record = parse_leftover_record(text);
  ASSERT_TRUE(record) << text;
  EXPECT_EQ(record->look.bytes, kWrittenBytes);
  EXPECT_DOUBLE_EQ(record->look.time, 1796572157.586551);
  ASSERT_EQ(record->byte_seconds.size(), kWrittenTotals.size());
  for (const auto& [key, total] : kWrittenTotals) {
    // 16 significant digits (the serializer's): exact to a part in 10^15.
    EXPECT_NEAR(record->byte_seconds.at(key), total, total * 1e-15) << key.first << key.second;
  }
}

// The readable file with one line replaced (or added: `from` empty).
std::string record_with_line(const std::string& text, const std::string& from,
                             const std::string& to) {
  if (from.empty()) return text + to + "\n";
  const auto at = text.find(from + "\n");
  EXPECT_NE(at, std::string::npos) << from;
  std::string changed = text;
  if (at != std::string::npos) changed.replace(at, from.size(), to);
  return changed;
}

TEST(LeftoverRecord, AnythingMalformedIsNoRecordAndTheCounterStartsFromZero) {
  const std::string good = written_textfile(kWrittenBytes, kWrittenTotals, 1796572157.5);
  ASSERT_TRUE(parse_leftover_record(good));
  const std::string gauge = R"(gpuclean_leftover_memory_bytes{class="orphan",owner_kind="none"} 0)";
  const std::string counter =
      R"(gpuclean_leftover_memory_byte_seconds_total{class="zombie-leader",owner_kind="none"} 0)";
  const std::string time = "gpuclean_last_scan_timestamp_seconds 1796572157.5";
  const std::vector<std::pair<std::string, std::string>> broken = {
      {"a negative value",
       record_with_line(good, counter, counter.substr(0, counter.size() - 1) + "-1")},
      {"NaN", record_with_line(good, gauge, gauge.substr(0, gauge.size() - 1) + "NaN")},
      {"+Inf", record_with_line(good, counter, counter.substr(0, counter.size() - 1) + "+Inf")},
      {"not a number",
       record_with_line(good, counter, counter.substr(0, counter.size() - 1) + "12abc")},
      {"out of range",
       record_with_line(good, counter, counter.substr(0, counter.size() - 1) + "1e999")},
      {"a timestamp", record_with_line(good, counter, counter + " 1796572157000")},
      {"a class outside the set",
       record_with_line(good, gauge,
                        R"(gpuclean_leftover_memory_bytes{class="active",owner_kind="none"} 0)")},
      {"an owner id for a kind",
       record_with_line(
           good, gauge,
           R"(gpuclean_leftover_memory_bytes{class="orphan",owner_kind="slurm-job:42"} 0)")},
      {"another label",
       record_with_line(
           good, gauge,
           R"(gpuclean_leftover_memory_bytes{class="orphan",owner_kind="none",pid="4"} 0)")},
      {"labels swapped",
       record_with_line(good, gauge,
                        R"(gpuclean_leftover_memory_bytes{owner_kind="none",class="orphan"} 0)")},
      {"an escape",
       record_with_line(good, gauge,
                        R"(gpuclean_leftover_memory_bytes{class="orph\"an",owner_kind="none"} 0)")},
      {"no labels", record_with_line(good, gauge, "gpuclean_leftover_memory_bytes 0")},
      {"a series twice", record_with_line(good, "", gauge)},
      {"the time twice", record_with_line(good, "", time)},
      {"a time with labels",
       record_with_line(good, time, R"(gpuclean_last_scan_timestamp_seconds{a="b"} 5)")},
      {"no time", record_with_line(good, time, "# no time")},
      {"cut short: no counter",
       good.substr(0, good.find("# HELP gpuclean_leftover_memory_byte_seconds"))},
      {"cut in a line", good.substr(0, good.find(counter) + 60)},
      {"empty", ""},
      {"binary", std::string("\0\xff\n\x01gpuclean_leftover_memory_bytes{\n", 36)},
      {"another program's file", "node_textfile_scrape_error 0\nfoo{class=\"orphan\"} 1\n"},
  };
  for (const auto& [what, text] : broken) {
    const auto record = parse_leftover_record(text);
    EXPECT_FALSE(record) << what << ":\n" << text;
    // As `metrics --textfile` goes on (cli/metrics_command.cpp): from the record when there is
    // one, else from nothing. So the counter starts from 0, never from the broken file's figures.
    const LeftoverLook now = look_at(1796572187.5, kWrittenBytes);
    const LeftoverSeries totals = record
                                      ? add_leftover_look(record->byte_seconds, record->look, now)
                                      : add_leftover_look({}, std::nullopt, now);
    EXPECT_EQ(totals.at({"orphan", "slurm-job"}), 0) << what;
    EXPECT_EQ(totals.at({"orphan", "none"}), 0) << what;
  }
}

TEST(LeftoverRecord, OtherMetricsLinesAreNotJudged) {
  std::string text = written_textfile(kWrittenBytes, kWrittenTotals, 1796572157.5);
  text += "gpuclean_leftover_memory_bytes_other{x=\"\\\"\"} -5\n";  // same prefix, another name
  text += "gpuclean_holder_memory_bytes{pid=\"other\"} +Inf\n";
  const auto record = parse_leftover_record(text);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->look.bytes, kWrittenBytes);
}

TEST(LeftoverRecord, ThirtySecondsLaterTheCounterGoesOnFromTheFile) {
  // The textfile timer's round: the file of the run before, then this run's look 30 s later.
  const std::string text = written_textfile(kWrittenBytes, kWrittenTotals, 1796572157.5);
  const auto record = parse_leftover_record(text);
  ASSERT_TRUE(record);
  const LeftoverSeries totals =
      add_leftover_look(record->byte_seconds, record->look, look_at(1796572187.5, kWrittenBytes));
  // 80 GiB × 30 s = 2,576,980,377,600 more for the job's orphans; 612 MiB × 30 s for the rest.
  EXPECT_EQ(totals.at({"orphan", "slurm-job"}), 2 * 2576980377600.0);
  EXPECT_EQ(totals.at({"unattributed", "none"}), 19251855360.0 + 641728512.0 * 30);
  EXPECT_EQ(totals.at({"zombie-leader", "none"}), 0);
}

TEST(LeftoverRecord, RewritingTheFileNeverMakesTheCounterGoDown) {
  // The file holds 16 significant digits (prometheus-cpp's serializer). A value read back and
  // written again, with nothing or a little added, must never come out smaller: Prometheus
  // would take it for a reset and count the whole total again. Values past 2^53 (doubles
  // coarser than the digits) and past 10^16 (digits coarser than doubles): 2,600 GiB-hours, an
  // 8-GPU node's leftovers in a few hours.
  const LeftoverKey orphan{"orphan", "none"};
  for (const double start : {9007199254740993.0, 9.999999999999999e15, 1.2345678901234567e16,
                             7.25e15 + 0.3, 1e17 / 3, 123.456, 4.5e18 + 12345}) {
    for (const double bytes : {0.0, 1.0, 3.0, 1024.0}) {
      LeftoverSeries totals = {{orphan, start}};
      LeftoverLook last = look_at(1796572157.25, {{orphan, bytes}});
      double written = -1;
      for (int round = 0; round < 20; ++round) {
        const std::string text = written_textfile(last.bytes, totals, last.time);
        const auto record = parse_leftover_record(text);
        ASSERT_TRUE(record) << text;
        const double now = record->byte_seconds.at(orphan);
        ASSERT_GE(now, written) << "round " << round << " from " << start << " + " << bytes;
        written = now;
        const LeftoverLook next = look_at(last.time + 0.001, {{orphan, bytes}});
        totals = add_leftover_look(record->byte_seconds, record->look, next);
        last = next;
      }
    }
  }
}

}  // namespace
}  // namespace gpuclean::diagnose
