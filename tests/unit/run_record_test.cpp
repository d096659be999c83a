#include "output/run_record.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "input/run_record_reader.h"
#include "output/run_plot.h"

namespace gpuclean::output {
namespace {

RunRecord sample_record() {
  RunRecord r;
  r.command = {"python", "serve.py", "--port", "8000"};
  r.mode = "cgroup";
  r.cgroup = "/gpuclean-run.42";
  r.started_at = 1764500000;
  r.duration = 12.5;
  r.pid = 43;
  r.end = WorkloadEnd::kSignaled;
  r.exit_signal = 9;
  r.exit_code = 137;
  r.gpu_source = "nvml";
  r.gpus = {{0, "NVIDIA H200", "GPU-a", 150ull << 30, 0, 8ull << 30, 0, true, ""},
            {1, "NVIDIA H200", "GPU-b", 150ull << 30, 0, 6ull << 30, 0, true, ""}};
  r.samples = {{0, {0, 0}}, {5, {8ull << 30, 6ull << 30}}, {12.4, {0, std::nullopt}}};
  r.events = {{0, RunEventKind::kStart, "pid 43"},
              {10, RunEventKind::kExit, ""},
              {10.1, RunEventKind::kTeardown, ""}};
  r.leftovers = {{44,
                  1,
                  "worker",
                  {"python", "-c", "w"},
                  {"STOP", "TERM", "CONT"},
                  LeftoverOutcome::kGone,
                  "",
                  10.1,
                  std::vector<std::string>{"/dev/nvidia0", "/dev/nvidiactl"}}};
  return r;
}

TEST(RunRecordTest, RoundTripsThroughJson) {
  const RunRecord r = sample_record();
  const std::string text = to_json(r, "host").dump();
  auto back = input::parse_run_record(text);
  ASSERT_TRUE(back.ok()) << back.error().context;
  EXPECT_EQ(back->command, r.command);
  EXPECT_EQ(back->exit_code, 137);
  EXPECT_EQ(back->exit_signal, 9);
  EXPECT_FALSE(back->exit_status);
  ASSERT_EQ(back->gpus.size(), 2u);
  EXPECT_EQ(back->gpus[1].peak, 6ull << 30);
  ASSERT_EQ(back->samples.size(), 3u);
  EXPECT_FALSE(back->samples[2].used[1]);  // null stays unknown, not 0
  ASSERT_EQ(back->leftovers.size(), 1u);
  EXPECT_EQ(back->leftovers[0].signals, r.leftovers[0].signals);
  EXPECT_EQ(back->end, WorkloadEnd::kSignaled);
  EXPECT_EQ(back->gpu_check, GpuCheck::kNone);
  EXPECT_EQ(back->leftovers[0].outcome, LeftoverOutcome::kGone);
  EXPECT_EQ(back->leftovers[0].devices, r.leftovers[0].devices);
  ASSERT_EQ(back->events.size(), 3u);
  EXPECT_EQ(back->events[2].kind, RunEventKind::kTeardown);
  EXPECT_EQ(back->events[0].detail, "pid 43");
}

TEST(RunRecordTest, StatesAreWrittenAsTheirNamesAndReadBack) {
  // The record's format is unchanged by the enums: the same names as before.
  RunRecord r = sample_record();
  r.gpu_check = GpuCheck::kNotChecked;
  r.end = WorkloadEnd::kSupervisionFailed;
  r.leftovers[0].outcome = LeftoverOutcome::kSkipped;
  const nlohmann::json doc = to_json(r, "host");
  EXPECT_EQ(doc["gpu_check"], "not-checked");
  EXPECT_EQ(doc["end"], "supervision-failed");
  EXPECT_EQ(doc["leftovers"][0]["outcome"], "skipped");
  for (GpuCheck c : {GpuCheck::kNone, GpuCheck::kBack, GpuCheck::kNotBack, GpuCheck::kNotChecked}) {
    EXPECT_EQ(gpu_check_from_string(to_string(c)), c);
  }
  for (std::string_view name : {"start", "signal", "interrupt", "timeout", "exit", "error",
                                "teardown", "teardown-done", "problem", "guard", "verified"}) {
    const auto kind = run_event_kind_from_string(name);
    ASSERT_TRUE(kind) << name;
    EXPECT_EQ(to_string(*kind), name);
  }
  for (WorkloadEnd e : {WorkloadEnd::kExited, WorkloadEnd::kSignaled, WorkloadEnd::kTimeout,
                        WorkloadEnd::kInterrupted, WorkloadEnd::kSupervisionFailed}) {
    EXPECT_EQ(workload_end_from_string(to_string(e)), e);
  }
  auto parsed = input::parse_run_record(doc.dump());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->gpu_check, GpuCheck::kNotChecked);
  EXPECT_EQ(parsed->leftovers[0].outcome, LeftoverOutcome::kSkipped);
  // A name gpuclean never writes is refused, and said.
  auto bad = input::parse_run_record(R"({"schema": 1, "kind": "run", "gpu_check": "clean"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().context, "record.gpu_check: \"clean\" is not one gpuclean writes");
  EXPECT_FALSE(
      input::parse_run_record(R"({"schema": 1, "kind": "run", "leftovers": [{"outcome": "x"}]})")
          .ok());
}

TEST(RunRecordTest, RefusesWhatItCannotTrust) {
  auto error_of = [](const std::string& text) {
    auto parsed = input::parse_run_record(text);
    return parsed.ok() ? std::string("parsed") : parsed.error().context;
  };
  EXPECT_EQ(error_of("{\"schema\": 1, \"kind\": \"run\", \"gpus\": ["), "not valid JSON");
  EXPECT_EQ(error_of("[1]"), "not a JSON object");
  EXPECT_NE(error_of("{\"schema\": 2, \"kind\": \"run\"}").find("schema 2"), std::string::npos);
  EXPECT_NE(error_of("{\"schema\": 1, \"verdict\": \"clean\"}").find("not a run record"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"schema": 1, "kind": "run", "exit_code": "zero"})").find("exit_code"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"schema": 1, "kind": "run", "gpus": [{"index": 0}],
                         "samples": [{"t": 0, "used": [1, 2]}]})")
                .find("2 values for 1 GPUs"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"schema": 1, "kind": "run", "gpus": [{"index": -1}]})"),
            "gpus[0].index: expected a non-negative integer, found number");
  // The path names the element: the second event's kind.
  EXPECT_EQ(error_of(R"({"schema": 1, "kind": "run",
                         "events": [{"kind": "exit"}, {"kind": "explode"}]})"),
            "events[1].kind: \"explode\" is not one gpuclean writes");
  // Negative control: the smallest valid record parses, every missing part empty.
  EXPECT_EQ(error_of(R"({"schema": 1, "kind": "run"})"), "parsed");
}

TEST(RunRecordTest, SummaryFlagsWhatIsLeftAsProblems) {
  RunRecord r = sample_record();
  auto lines = run_summary_lines(r);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0].text, "workload ended by signal 9 after 12.5 s; exit code 137");
  for (const SummaryLine& line : lines) EXPECT_FALSE(line.problem) << line.text;

  r.leftovers[0].outcome = LeftoverOutcome::kRemaining;
  r.leftovers[0].reason = "thread 44 is frozen";
  r.leftovers[0].cmdline = {"evil\x1b[2Jname"};
  r.gpus[0].back = false;
  r.gpus[0].note = "8.0 GiB not returned";
  lines = run_summary_lines(r);
  int problems = 0;
  for (const SummaryLine& line : lines) {
    problems += line.problem;
    EXPECT_EQ(line.text.find('\x1b'), std::string::npos) << "escaped for the terminal";
  }
  EXPECT_EQ(problems, 2);
}

// Issue 50: the summary counted the leftovers ("1 left-behind process found at teardown, 1
// ended") and named none. Now each has a line: PID, command, the device files it held, how it
// ended; the lines are problems (printed with -q) under --fail-on-leftovers; a record without
// `devices` (written before) reads back as not known. Failed on commit f9d1cde: it did not
// compile ("'struct gpuclean::RunLeftover' has no member named 'devices'"; run_summary_lines
// took no flag), and its summary had no line per leftover.
TEST(RunRecordTest, SummaryNamesEachLeftoverWithWhatItHeldAndHowItEnded) {
  RunRecord r = sample_record();
  RunLeftover killed = r.leftovers[0];
  killed.pid = 45;
  killed.cmdline = {"/usr/bin/python3", "worker.py", "--rank", "1"};
  killed.signals = {"STOP", "TERM", "CONT", "KILL"};
  killed.devices = std::vector<std::string>{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl",
                                            "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};
  RunLeftover unknown = r.leftovers[0];
  unknown.pid = 46;
  unknown.devices.reset();
  unknown.signals.clear();
  r.leftovers.push_back(killed);
  r.leftovers.push_back(unknown);
  std::vector<std::string> texts;
  for (const SummaryLine& line : run_summary_lines(r)) {
    texts.push_back(line.text);
    EXPECT_FALSE(line.problem) << line.text;
  }
  auto has = [&texts](const std::string& text) {
    return std::find(texts.begin(), texts.end(), text) != texts.end();
  };
  EXPECT_TRUE(has("3 left-behind processes found at teardown, 3 ended"));
  EXPECT_TRUE(
      has("left behind: pid 44 (python -c w), holding /dev/nvidia0, /dev/nvidiactl: "
          "ended by SIGTERM"));
  EXPECT_TRUE(
      has("left behind: pid 45 (python3 worker.py --rank 1), holding /dev/nvidia0, "
          "/dev/nvidia1, /dev/nvidiactl and 2 more: ended by SIGKILL after SIGTERM"));
  EXPECT_TRUE(has("left behind: pid 46 (python -c w): gone before any signal"));

  // --fail-on-leftovers: the count and every leftover's line are problems.
  std::size_t problems = 0;
  for (const SummaryLine& line : run_summary_lines(r, true)) problems += line.problem;
  EXPECT_EQ(problems, 4u);

  // Read back without `devices` (a record written before): not known, and no "holding".
  nlohmann::json doc = to_json(r, "host");
  doc["leftovers"][0].erase("devices");
  auto back = input::parse_run_record(doc.dump());
  ASSERT_TRUE(back.ok()) << back.error().context;
  EXPECT_FALSE(back->leftovers[0].devices);
  EXPECT_EQ(back->leftovers[1].devices, killed.devices);
}

// A workload that forked thousands: 20 lines, then a count; a survivor is always named.
// What run tells the flight recorder: "1 leftover torn down" (issue 50: "1 leftovers" on
// f9d1cde).
TEST(RunRecordTest, TheRecordersSummaryCountsLeftoversInWords) {
  RunRecord one = sample_record();
  EXPECT_EQ(run_action_json(one, 0)["summary"].get<std::string>().rfind("1 leftover torn down", 0),
            0u);
  RunRecord two = sample_record();
  two.leftovers.push_back(two.leftovers.front());
  EXPECT_EQ(run_action_json(two, 0)["summary"].get<std::string>().rfind("2 leftovers torn down", 0),
            0u);
}

// Issue 50's wording, each on f9d1cde: "ended by signal 15 after a second interrupt after 2.5 s",
// and nothing at all about GPU memory without NVML.
TEST(RunRecordTest, SummarySaysASecondInterruptOnceAndAMemoryNotChecked) {
  RunRecord r = sample_record();
  r.end = WorkloadEnd::kInterrupted;
  r.exit_signal = 15;
  r.exit_code = 143;
  r.workload_seconds = 2.5;
  r.gpu_check = GpuCheck::kNone;
  r.gpus.clear();
  std::string text;
  for (const SummaryLine& line : run_summary_lines(r, false)) text += line.text + "\n";
  EXPECT_NE(text.find("workload ended by signal 15 after 2.5 s, torn down at a second interrupt; "
                      "exit code 143"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("GPU memory not checked: no NVML"), std::string::npos) << text;
  // Negative control: with NVML's answer, no such line.
  r.gpu_check = GpuCheck::kBack;
  text.clear();
  for (const SummaryLine& line : run_summary_lines(r, false)) text += line.text + "\n";
  EXPECT_EQ(text.find("not checked"), std::string::npos) << text;
}

TEST(RunRecordTest, SummaryBoundsTheLeftoverLines) {
  RunRecord r = sample_record();
  const RunLeftover one = r.leftovers[0];
  r.leftovers.clear();
  for (Pid pid = 1000; pid < 1100; ++pid) {
    r.leftovers.push_back(one);
    r.leftovers.back().pid = pid;
  }
  r.leftovers.back().outcome = LeftoverOutcome::kRemaining;
  r.leftovers.back().reason = "thread 1099 is frozen";
  std::size_t named = 0;
  bool counted = false;
  bool survivor = false;
  for (const SummaryLine& line : run_summary_lines(r)) {
    named += line.text.rfind("left behind: pid", 0) == 0;
    counted = counted || line.text.rfind("… and 79 more left behind", 0) == 0;
    survivor = survivor || line.text.rfind("STILL RUNNING: pid 1099 ", 0) == 0;
  }
  EXPECT_EQ(named, 20u);
  EXPECT_TRUE(counted);
  EXPECT_TRUE(survivor);
}

TEST(RunPlotTest, DrawsOneLinePerGpuTheEventsAndTheLeftovers) {
  const std::string svg = render_run_svg(sample_record());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  std::size_t lines = 0;
  for (std::size_t at = svg.find("class=\"gpu\""); at != std::string::npos;
       at = svg.find("class=\"gpu\"", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 2u);
  // exit and teardown 0.1 s apart share a line and a label, with the leftovers found then;
  // start is not marked.
  EXPECT_NE(svg.find(">exit, teardown, 1 left behind, all ended<"), std::string::npos);
  EXPECT_EQ(svg.find(">start<"), std::string::npos);
  EXPECT_NE(svg.find("1 left behind, all ended"), std::string::npos);
  EXPECT_NE(svg.find("serve.py"), std::string::npos);
}

TEST(RunPlotTest, EscapesTheCommandAndSaysWhenThereIsNoData) {
  RunRecord r;
  r.command = {"sh", "-c", "echo <script>&\"'"};
  const std::string svg = render_run_svg(r);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;&amp;&quot;&apos;"), std::string::npos);
  EXPECT_NE(svg.find("no GPU memory samples"), std::string::npos);
  EXPECT_EQ(svg.find("class=\"gpu\""), std::string::npos);
}

}  // namespace
}  // namespace gpuclean::output
