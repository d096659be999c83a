// The benchmark guard on plain data: the snapshot reader on hand-edited fixtures
// (tests/fixtures/snapshots/), the writer read back, the diff's relevance rules, the Xid parser
// and the host facts read from temp dirs. Each rule has its negative control beside it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/units.h"
#include "diagnose/snapshot_diff.h"
#include "input/snapshot_reader.h"
#include "output/diff_view.h"
#include "output/snapshot_json.h"
#include "procfs/host_facts.h"

namespace gpuclean {
namespace {

std::string fixture_text(const std::string& name) {
  std::ifstream in(std::string(GPUCLEAN_FIXTURES) + "/snapshots/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Snapshot fixture(const std::string& name) {
  auto snapshot = input::parse_snapshot(fixture_text(name));
  EXPECT_TRUE(snapshot.ok()) << name << ": " << (snapshot.ok() ? "" : snapshot.error().context);
  return snapshot.ok() ? *snapshot : Snapshot{};
}

std::string read_error(const std::string& name) {
  auto snapshot = input::parse_snapshot(fixture_text(name));
  EXPECT_FALSE(snapshot.ok()) << name << " was accepted";
  return snapshot.ok() ? "" : snapshot.error().context;
}

const Difference* find(const std::vector<Difference>& diffs, const std::string& field) {
  for (const Difference& d : diffs) {
    if (d.field == field) return &d;
  }
  return nullptr;
}

std::size_t changing(const std::vector<Difference>& diffs) {
  return static_cast<std::size_t>(std::count_if(
      diffs.begin(), diffs.end(), [](const Difference& d) { return d.result_changing; }));
}

// ---- reader ----

TEST(SnapshotReader, ReadsTheBaselineFixture) {
  const Snapshot s = fixture("baseline.json");
  EXPECT_EQ(s.schema, 1);
  EXPECT_EQ(s.driver_version, "580.159.04");
  EXPECT_EQ(s.cuda_driver_version, 13000);
  ASSERT_TRUE(s.gpus.has_value());
  ASSERT_EQ(s.gpus->size(), 2u);
  const SnapshotGpu& g = s.gpus->at(0);
  EXPECT_EQ(g.details.application_clocks.sm_mhz, 1980u);
  EXPECT_EQ(g.details.clocks.sm_mhz, 345u);
  EXPECT_EQ(g.details.throttle_reasons, 1u);
  EXPECT_EQ(g.details.power_limit_mw, 700000u);
  EXPECT_EQ(g.details.ecc_errors.aggregate_corrected, 2u);
  EXPECT_EQ(g.details.remapping_pending, false);
  ASSERT_TRUE(s.holders.has_value());
  EXPECT_EQ(s.holders->at(0).klass, "monitor");
  EXPECT_EQ(s.holders->at(0).name, "nvidia-smi");
  ASSERT_TRUE(s.kernel_log.has_value());
  EXPECT_EQ(s.kernel_log->xids.at(0).xid, 13u);
  ASSERT_TRUE(s.system.has_value());
  EXPECT_EQ(s.system->environment.at("NCCL_ALGO"), "Ring");
}

TEST(SnapshotReader, BadInputSaysWhatIsWrong) {
  EXPECT_NE(read_error("truncated.json").find("truncated"), std::string::npos);
  EXPECT_NE(read_error("not_json.json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(read_error("future_schema.json").find("schema 2 is newer"), std::string::npos);
  EXPECT_EQ(read_error("wrong_type.json"),
            "gpus[0].clocks.sm.application: expected a non-negative integer, found string");
  EXPECT_NE(read_error("other_kind.json").find("not a snapshot"), std::string::npos);
  for (const char* text : {"[]", "{}", "{\"schema\": \"1\"}", "{\"schema\": 0}", "",
                           "{\"schema\": 1, \"gpus\": [7]}", "{\"schema\": 1, \"holders\": [{}]}",
                           "{\"schema\": 1, \"system\": {\"environment\": {\"A\": 1}}}"}) {
    EXPECT_FALSE(input::parse_snapshot(text).ok()) << text;
  }
  // Negative control: the smallest valid snapshot is just the schema.
  EXPECT_TRUE(input::parse_snapshot("{\"schema\": 1}").ok());
}

TEST(SnapshotReader, MissingFieldsAreUnknown) {
  const Snapshot s = fixture("old_partial.json");
  ASSERT_TRUE(s.gpus.has_value());
  EXPECT_FALSE(s.gpus->at(0).details.clocks.sm_mhz.has_value());
  EXPECT_FALSE(s.holders.has_value());
  EXPECT_FALSE(s.system.has_value());
  EXPECT_FALSE(s.kernel_log.has_value());
  EXPECT_FALSE(s.cuda_driver_version.has_value());
  // Nulls too.
  auto nulls = input::parse_snapshot(
      R"({"schema": 1, "gpus": [{"index": 0, "clocks": {"sm": {"application": null}}}]})");
  ASSERT_TRUE(nulls.ok());
  EXPECT_FALSE(nulls->gpus->at(0).details.application_clocks.sm_mhz.has_value());
}

TEST(SnapshotReader, WithoutNvmlTheGpuListIsUnknownNotEmpty) {
  auto s = input::parse_snapshot(R"({"schema": 1, "nvml": {"state": "disabled"}, "gpus": []})");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->gpus.has_value());
  auto present =
      input::parse_snapshot(R"({"schema": 1, "nvml": {"state": "present"}, "gpus": []})");
  ASSERT_TRUE(present.ok());
  EXPECT_TRUE(present->gpus.has_value());  // negative control: NVML said there are none
}

TEST(SnapshotWriter, WhatIsWrittenReadsBack) {
  StatusReport report;
  report.host = "h";
  report.time = 1.8e9;
  report.nvml_state = NvmlState::kPresent;
  report.driver_version = "580.159.04";
  report.cuda_driver_version = 13000;
  GpuReport g;
  g.gpu.index = 0;
  g.gpu.uuid = "GPU-x";
  g.gpu.memory = GpuMemory{100 * kGiB, 5 * kGiB, 95 * kGiB, std::nullopt};
  g.gpu.mig_enabled = false;
  report.diagnosis.gpus.push_back(g);
  Holder h;
  h.process.pid = 77;
  h.process.comm = "python3";
  h.process.cmdline = {"/usr/bin/python3", "bench.py"};
  h.process.start_time = 1.7e9;
  h.klass = HolderClass::kOrphan;
  h.gpu_memory[0] = 5 * kGiB;
  report.diagnosis.holders.push_back(h);
  GpuDetails d;
  d.index = 0;
  d.application_clocks = {1980, 3201};
  d.throttle_reasons = 0x41;
  d.ecc_errors.volatile_uncorrected = 4;
  d.remapping_failed = true;
  HostFacts facts;
  facts.kernel_release = "6.18";
  facts.environment["NCCL_ALGO"] = "Ring";
  KernelLog log;
  log.readable = true;
  log.xids.push_back({12.5, 79, "PCI:0000:00:06", "GPU has fallen off the bus."});
  const std::vector<GpuDetails> details = {d};
  const nlohmann::json doc = output::snapshot_document({report, "13.580", details, facts, log});
  EXPECT_FALSE(doc.contains("throttle_reasons"));  // per GPU, not top level
  EXPECT_EQ(doc["gpus"][0]["throttle_reasons"]["active"],
            nlohmann::json::array({"gpu_idle", "hw_thermal_slowdown"}));
  // In memory (signed integers, as "now" is read for a diff) and parsed from text alike.
  auto direct = input::read_snapshot(doc);
  ASSERT_TRUE(direct.ok()) << direct.error().context;
  EXPECT_EQ(direct->holders->at(0).pid, 77);
  auto back = input::read_snapshot(nlohmann::json::parse(doc.dump()));
  ASSERT_TRUE(back.ok()) << back.error().context;
  EXPECT_EQ(back->nvml_version, "13.580");
  EXPECT_EQ(back->gpus->at(0).memory_used, 5 * kGiB);
  EXPECT_EQ(back->gpus->at(0).details.application_clocks, d.application_clocks);
  EXPECT_EQ(back->gpus->at(0).details.ecc_errors, d.ecc_errors);
  EXPECT_EQ(back->gpus->at(0).details.remapping_failed, true);
  EXPECT_FALSE(back->gpus->at(0).details.temperature_c.has_value());
  EXPECT_EQ(back->holders->at(0).name, "python3");
  EXPECT_EQ(back->holders->at(0).klass, "orphan");
  EXPECT_EQ(back->holders->at(0).gpu_memory.at(0), 5 * kGiB);
  EXPECT_EQ(back->kernel_log->xids, log.xids);
  EXPECT_EQ(back->system->environment, facts.environment);
  // And a snapshot compared with itself has no differences.
  EXPECT_TRUE(diagnose::diff_snapshots(*back, *back).empty());
}

// ---- diff ----

TEST(SnapshotDiff, IdenticalSnapshotsHaveNoDifferences) {
  const Snapshot s = fixture("baseline.json");
  EXPECT_TRUE(diagnose::diff_snapshots(s, s).empty());
}

TEST(SnapshotDiff, EverythingThatChangesAResultIsFlaggedMostRelevantFirst) {
  const auto diffs = diagnose::diff_snapshots(fixture("baseline.json"), fixture("degraded.json"));
  ASSERT_FALSE(diffs.empty());
  EXPECT_EQ(diffs.front().category, DiffCategory::kHolders);
  EXPECT_TRUE(diffs.front().result_changing);
  EXPECT_NE(
      diffs.front().message.find("new holder pid 72309 (sglang::scheduler, orphan, user alice)"),
      std::string::npos)
      << diffs.front().message;
  // Categories never go backwards.
  for (std::size_t i = 1; i < diffs.size(); ++i) {
    EXPECT_LE(diffs[i - 1].category, diffs[i].category) << diffs[i].message;
  }
  for (const char* field :
       {"gpus[0].memory.used", "gpus[0].throttle_reasons.hw_thermal_slowdown",
        "gpus[0].clocks.sm.application", "gpus[0].ecc.volatile.uncorrected",
        "gpus[0].remapped_rows.pending", "kernel_log.xid", "gpus[1].power_limit_mw",
        "nvml.driver_version", "system.cpu_governor", "system.environment.NCCL_ALGO"}) {
    const Difference* d = find(diffs, field);
    ASSERT_NE(d, nullptr) << field;
    EXPECT_TRUE(d->result_changing) << field;
  }
  // Listed but not result-changing: they follow load, or only count corrected errors.
  for (const char* field :
       {"gpus[0].clocks.sm.current", "gpus[0].temperature_c", "gpus[0].ecc.volatile.corrected"}) {
    const Difference* d = find(diffs, field);
    ASSERT_NE(d, nullptr) << field;
    EXPECT_FALSE(d->result_changing) << field;
  }
  EXPECT_EQ(find(diffs, "gpus[0].clocks.sm.application")->message,
            "GPU 0: application SM clock 1980 MHz → 1410 MHz");
  EXPECT_EQ(find(diffs, "gpus[1].power_limit_mw")->message, "GPU 1: power limit 700 W → 500 W");
  const Difference* xid = find(diffs, "kernel_log.xid");
  EXPECT_NE(xid->message.find("new Xid 79 on PCI:0000:00:06"), std::string::npos);
  EXPECT_EQ(std::count_if(diffs.begin(), diffs.end(),
                          [](const Difference& d) { return d.field == "kernel_log.xid"; }),
            1)
      << "the Xid 13 the baseline already had is not new";
}

TEST(SnapshotDiff, NoiseIsListedButChangesNoResult) {
  const auto diffs = diagnose::diff_snapshots(fixture("baseline.json"), fixture("noise.json"));
  EXPECT_FALSE(diffs.empty());
  EXPECT_EQ(changing(diffs), 0u);
  EXPECT_EQ(find(diffs, "holders"), nullptr) << "a monitor coming or going is not listed";
}

TEST(SnapshotDiff, OldSnapshotFieldsCompareAsUnknown) {
  const auto diffs =
      diagnose::diff_snapshots(fixture("old_partial.json"), fixture("baseline.json"));
  const Difference* clock = find(diffs, "gpus[0].clocks.sm.application");
  ASSERT_NE(clock, nullptr);
  EXPECT_EQ(clock->before, "unknown");
  EXPECT_FALSE(clock->result_changing);
  // What both sides know still counts: another driver, and a GPU the old one did not have.
  EXPECT_TRUE(find(diffs, "nvml.driver_version")->result_changing);
  EXPECT_TRUE(find(diffs, "gpus[1]")->result_changing);
  for (const Difference& d : diffs) {
    if (d.before == "unknown" || d.after == "unknown") {
      EXPECT_FALSE(d.result_changing) << d.message;
    }
  }
  // The other way round too (a newer snapshot compared with an older one), without a crash.
  EXPECT_FALSE(
      diagnose::diff_snapshots(fixture("baseline.json"), fixture("old_partial.json")).empty());
}

Snapshot one_gpu(Bytes used) {
  Snapshot s;
  s.schema = 1;
  SnapshotGpu g;
  g.uuid = "GPU-a";
  g.memory_used = used;
  s.gpus = std::vector<SnapshotGpu>{g};
  return s;
}

TEST(SnapshotDiff, MemoryGrowthBeyondTheToleranceChangesResults) {
  const Snapshot base = one_gpu(kGiB);
  EXPECT_TRUE(diagnose::diff_snapshots(base, one_gpu(kGiB + kGiB / 2)).empty()) << "within 1 GiB";
  auto grown = diagnose::diff_snapshots(base, one_gpu(3 * kGiB));
  ASSERT_EQ(grown.size(), 1u);
  EXPECT_TRUE(grown[0].result_changing);
  EXPECT_EQ(grown[0].message, "GPU 0: memory used 1.0 GiB → 3.0 GiB (+2.0 GiB)");
  auto freed = diagnose::diff_snapshots(one_gpu(3 * kGiB), base);
  ASSERT_EQ(freed.size(), 1u);
  EXPECT_FALSE(freed[0].result_changing);
  diagnose::DiffOptions wide;
  wide.memory_tolerance = 4 * kGiB;
  EXPECT_TRUE(diagnose::diff_snapshots(base, one_gpu(3 * kGiB), wide).empty());
}

TEST(SnapshotDiff, GpusAreMatchedByUuidAndSelectable) {
  Snapshot a = one_gpu(kGiB);
  Snapshot b = one_gpu(kGiB);
  b.gpus->at(0).index = 1;  // same board, another index
  auto moved = diagnose::diff_snapshots(a, b);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_FALSE(moved[0].result_changing);
  b.gpus->at(0).uuid = "GPU-b";  // another board
  auto swapped = diagnose::diff_snapshots(a, b);
  EXPECT_EQ(changing(swapped), 2u) << "one GPU gone, one new";
  diagnose::DiffOptions only;
  only.gpus = std::set<unsigned>{7};
  EXPECT_TRUE(diagnose::diff_snapshots(a, b, only).empty());
}

TEST(SnapshotDiff, ThrottleReasonsOnlySlowdownsChangeResults) {
  Snapshot a = one_gpu(0);
  Snapshot b = one_gpu(0);
  a.gpus->at(0).details.throttle_reasons = 0x1;  // idle
  b.gpus->at(0).details.throttle_reasons = 0x0;  // busy: not idle any more
  auto d = diagnose::diff_snapshots(a, b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].result_changing);
  b.gpus->at(0).details.throttle_reasons = 0x4 | 0x1;  // sw_power_cap
  d = diagnose::diff_snapshots(a, b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].result_changing);
  EXPECT_EQ(d[0].message, "GPU 0: throttle reason sw_power_cap now active");
}

Snapshot with_log(std::optional<std::string> boot, std::vector<XidEvent> xids,
                  bool readable = true) {
  Snapshot s;
  s.schema = 1;
  s.kernel_log = KernelLog{readable, "", std::move(xids)};
  s.system = HostFacts{};
  s.system->boot_id = std::move(boot);
  return s;
}

TEST(SnapshotDiff, XidEventsAreNewOnlyAfterTheSnapshot) {
  const XidEvent old_event{100, 13, "PCI:0000:00:06", "old"};
  const XidEvent new_event{200, 79, "PCI:0000:00:06", "fallen off the bus"};
  auto same =
      diagnose::diff_snapshots(with_log("b1", {old_event}), with_log("b1", {old_event, new_event}));
  ASSERT_EQ(same.size(), 1u);
  EXPECT_TRUE(same[0].result_changing);
  // Negative control: the ring dropped the old event, nothing new happened.
  EXPECT_TRUE(diagnose::diff_snapshots(with_log("b1", {old_event}), with_log("b1", {})).empty());
  // After a reboot every event is new (plus the reboot itself, informational).
  auto rebooted =
      diagnose::diff_snapshots(with_log("b1", {old_event}), with_log("b2", {old_event}));
  EXPECT_EQ(changing(rebooted), 1u);
  EXPECT_NE(find(rebooted, "system.boot_id"), nullptr);
  // An unreadable log cannot be compared: said, but not a failure.
  auto unreadable =
      diagnose::diff_snapshots(with_log("b1", {old_event}), with_log("b1", {}, false));
  ASSERT_EQ(unreadable.size(), 1u);
  EXPECT_FALSE(unreadable[0].result_changing);
}

TEST(DiffView, CheckLinesAreTheResultChangingOnes) {
  DiffReport report;
  report.before = {"base.json", "h", "t"};
  report.after = {"now", "h", "t2"};
  report.differences = diagnose::diff_snapshots(fixture("baseline.json"), fixture("degraded.json"));
  std::ostringstream lines;
  output::render_against_lines(lines, report);
  const std::string text = lines.str();
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')),
            result_changing_count(report));
  EXPECT_EQ(text.find("gpuclean: new holder pid 72309"), 0u) << text;
  EXPECT_NE(text.find("(since base.json)"), std::string::npos);
  EXPECT_EQ(text.find("temperature"), std::string::npos) << "informational lines stay out";
}

// ---- kernel log and host facts ----

TEST(KernelLog, ParsesXidRecords) {
  auto e = procfs::parse_xid_record(
      "3,1234,4000250000,-;NVRM: Xid (PCI:0000:00:06): 79, pid=72309, name=python3, GPU has "
      "fallen off the bus.");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->xid, 79u);
  EXPECT_EQ(e->device, "PCI:0000:00:06");
  EXPECT_DOUBLE_EQ(e->seconds_since_boot, 4000.25);
  EXPECT_EQ(e->message, "pid=72309, name=python3, GPU has fallen off the bus.");
  auto function = procfs::parse_xid_record("4,1,2,-;NVRM: Xid (PCI:0000:3B:00.1): 13, Graphics");
  ASSERT_TRUE(function.has_value());
  EXPECT_EQ(function->device, "PCI:0000:3B:00.1");
  for (const char* other : {"6,1,2,-;usb 1-1: new device", "3,1,2,-;NVRM: Xid (PCI:0000:00:06", "",
                            "3,1,2,-;NVRM: Xid (PCI:0000:00:06): x, bad", "3,1,2,-;NVRM: Xid (): ",
                            "6,1,2,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module"}) {
    EXPECT_FALSE(procfs::parse_xid_record(other).has_value()) << other;
  }
}

TEST(KernelLog, OnlyTheKernelsOwnXidRecordsCount) {
  // Issue 48 item 8: what any user can put into the kernel log, as the log shows it (both
  // forged on this machine: docs/security.md). Before, each parsed as an Xid 79.
  for (const char* forged :
       {// a tmpfs mount option, from a user namespace (facility 0, but not NVRM's text)
        "3,348,8885385588,-;tmpfs: Unknown parameter 'NVRM: Xid (PCI:0000:41:00): 79'",
        // a process named "NVRM: Xid (PCI:" (15 characters) that segfaults
        "6,349,8890433766,-;NVRM: Xid (PCI:[21233]: segfault at 0 ip 00007f0e54385ad8",
        // root's or a user's write to /dev/kmsg: facility 1 (user) at least
        "12,350,8890433800,-;NVRM: Xid (PCI:0000:41:00): 79, GPU has fallen off the bus.",
        // a line without the record prefix says nothing about who wrote it
        "NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception",
        // not an address
        "3,1,2,-;NVRM: Xid (PCI:00000:3b:00): 13, x", "3,1,2,-;NVRM: Xid (PCI:0000:3g:00): 13, x",
        "3,1,2,-;NVRM: Xid (PCI:0000:3b:00.9): 13, x"}) {
    EXPECT_FALSE(procfs::parse_xid_record(forged).has_value()) << forged;
  }
  // Negative control: the driver's own record, as a real Xid reads.
  EXPECT_TRUE(procfs::parse_xid_record("3,351,8890433900,-;NVRM: Xid (PCI:0000:41:00): 79, "
                                       "pid=1, GPU has fallen off the bus.")
                  .has_value());
}

TEST(KernelLog, ReadsAFileKeepingTheLastEvents) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpuclean-kmsg-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream log(dir / "kmsg");
    for (int i = 0; i < 5; ++i) {
      log << "4," << i << "," << (i + 1) * 1000000 << ",-;NVRM: Xid (PCI:0000:00:06): " << 40 + i
          << ", event " << i << "\n SUBSYSTEM=pci\n";
      log << "6," << i << ",1,-;unrelated line\n";
    }
  }
  const KernelLog log = procfs::read_kernel_log((dir / "kmsg").string(), 3);
  EXPECT_TRUE(log.readable);
  ASSERT_EQ(log.xids.size(), 3u);
  EXPECT_EQ(log.xids.front().xid, 42u);
  EXPECT_EQ(log.xids.back().xid, 44u);
  const KernelLog missing = procfs::read_kernel_log((dir / "nothing").string());
  EXPECT_FALSE(missing.readable);
  EXPECT_NE(missing.error.find("No such file"), std::string::npos) << missing.error;
  std::filesystem::remove_all(dir);
}

TEST(HostFacts, ReadsRootsAndKeepsRelevantVariables) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("gpuclean-host-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "proc/sys/kernel/random");
  std::ofstream(root / "proc/sys/kernel/osrelease") << "6.18.44\n";
  std::ofstream(root / "proc/sys/kernel/random/boot_id") << "b1\n";
  for (const char* cpu : {"cpu0", "cpu1", "cpu12"}) {
    std::filesystem::create_directories(root / "sys/devices/system/cpu" / cpu / "cpufreq");
    std::ofstream(root / "sys/devices/system/cpu" / cpu / "cpufreq/scaling_governor")
        << (std::string(cpu) == "cpu1" ? "powersave\n" : "performance\n");
  }
  std::filesystem::create_directories(root / "sys/devices/system/cpu/cpufreq/policy0");
  procfs::HostRoots roots;
  roots.proc = (root / "proc").string();
  roots.sys = (root / "sys").string();
  const HostFacts facts = procfs::read_host_facts(
      roots, {"CUDA_VISIBLE_DEVICES=1", "NCCL_DEBUG=INFO", "HOME=/root", "SECRET_TOKEN=x",
              "NVIDIA_VISIBLE_DEVICES=all", "OMP_NUM_THREADS=8", "broken"});
  EXPECT_EQ(facts.kernel_release, "6.18.44");
  EXPECT_FALSE(facts.kernel_version.has_value());
  EXPECT_EQ(facts.boot_id, "b1");
  EXPECT_EQ(facts.cpu_governor, "performance,powersave");
  const std::map<std::string, std::string> expected = {{"CUDA_VISIBLE_DEVICES", "1"},
                                                       {"NCCL_DEBUG", "INFO"},
                                                       {"NVIDIA_VISIBLE_DEVICES", "all"},
                                                       {"OMP_NUM_THREADS", "8"}};
  EXPECT_EQ(facts.environment, expected);
  procfs::HostRoots empty;
  empty.proc = (root / "none").string();
  empty.sys = (root / "none").string();
  const HostFacts nothing = procfs::read_host_facts(empty, {});
  EXPECT_FALSE(nothing.kernel_release.has_value());
  EXPECT_FALSE(nothing.cpu_governor.has_value()) << "no cpufreq (a VM) is unknown";
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace gpuclean
