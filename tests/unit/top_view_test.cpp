// `gpuclean top`'s screen, composed without a terminal (output/top_view.h).
#include "output/top_view.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include <fmt/format.h>

#include "core/units.h"
#include "diagnose/verdict.h"
#include "output/text_width.h"

namespace gpuclean::output {
namespace {

Holder holder(Pid pid, Pid ppid, HolderClass klass, Bytes bytes, std::uint64_t start,
              const std::string& command) {
  Holder h;
  h.process.pid = pid;
  h.process.ppid = ppid;
  h.process.user = "alice";
  h.process.start_ticks = start;
  h.process.start_time = 1764500000.0 - static_cast<double>(1000 - start);
  h.process.cmdline = {command};
  h.klass = klass;
  if (bytes > 0) h.gpu_memory[0] = bytes;
  return h;
}

StatusReport report_with_tree() {
  StatusReport r;
  r.host = "h200-1";
  r.time = 1764500000;
  r.nvml_state = NvmlState::kPresent;
  r.driver_version = "580.159.04";
  GpuReport g;
  g.gpu.index = 0;
  g.gpu.memory = GpuMemory{140 * kGiB, 30 * kGiB, 110 * kGiB, std::nullopt};
  g.attributed = 28 * kGiB;
  g.unattributed = 2 * kGiB;
  r.diagnosis.gpus.push_back(g);
  // A server (100) with two workers (101, 102), and an unrelated orphan (300), oldest first.
  r.diagnosis.holders = {holder(100, 1, HolderClass::kActive, 4 * kGiB, 10, "serve.py"),
                         holder(101, 100, HolderClass::kActive, 8 * kGiB, 20, "worker-a"),
                         holder(102, 100, HolderClass::kActive, 2 * kGiB, 30, "worker-b"),
                         holder(300, 1, HolderClass::kOrphan, 14 * kGiB, 40, "leftover\x1b[2J")};
  r.diagnosis.holders[3].inherited_from = 299;
  r.diagnosis.problems.push_back({ProblemKind::kOrphan, 0u, 300,
                                  "GPU 0: 14.0 GiB held by orphan pid 300", "gpuclean kill 300"});
  r.diagnosis.clean = false;
  r.verdict = diagnose::status_verdict(r);
  return r;
}

std::string text_of(const ScreenLine& line) {
  std::string text;
  for (const Segment& s : line) text += s.text;
  return text;
}

std::string screen_text(const TopScreen& screen) {
  std::string text;
  for (const ScreenLine& line : screen.lines) text += text_of(line) + '\n';
  return text;
}

std::vector<Pid> pids(const std::vector<TopRow>& rows) {
  std::vector<Pid> out;
  for (const TopRow& row : rows) out.push_back(row.holder->process.pid);
  return out;
}

TEST(TopRows, TreeKeepsChildrenUnderTheirParentAndSortsSiblings) {
  const StatusReport r = report_with_tree();
  const auto rows = top_rows(r.diagnosis, TopSort::kMemory, true, "");
  // Roots by memory: the orphan (14 GiB) before the server (4 GiB); the workers under it,
  // the larger first.
  EXPECT_EQ(pids(rows), (std::vector<Pid>{300, 100, 101, 102}));
  EXPECT_EQ(rows[2].depth, 1);
  EXPECT_EQ(rows[1].depth, 0);
  // Negative control: flat, the workers leave their parent.
  EXPECT_EQ(pids(top_rows(r.diagnosis, TopSort::kMemory, false, "")),
            (std::vector<Pid>{300, 101, 100, 102}));
}

TEST(TopRows, SortsByAgeAndPidAndFilters) {
  const StatusReport r = report_with_tree();
  EXPECT_EQ(pids(top_rows(r.diagnosis, TopSort::kAge, false, "")),
            (std::vector<Pid>{100, 101, 102, 300}));
  EXPECT_EQ(pids(top_rows(r.diagnosis, TopSort::kPid, false, "")),
            (std::vector<Pid>{100, 101, 102, 300}));
  EXPECT_EQ(pids(top_rows(r.diagnosis, TopSort::kMemory, true, "WORKER")),
            (std::vector<Pid>{101, 102}));
  EXPECT_EQ(pids(top_rows(r.diagnosis, TopSort::kMemory, true, "orphan")), (std::vector<Pid>{300}));
  EXPECT_EQ(pids(top_rows(r.diagnosis, TopSort::kMemory, true, "101")), (std::vector<Pid>{101}));
  EXPECT_EQ(next(TopSort::kMemory), TopSort::kGpu);
  EXPECT_EQ(next(TopSort::kRss), TopSort::kAge);
  EXPECT_EQ(next(TopSort::kPid), TopSort::kMemory);
}

TEST(TopScreen, FitsEachSizeAndShowsVerdictGpuProblemsAndRows) {
  const StatusReport r = report_with_tree();
  MemoryHistory history;
  history.add(r.time - 30, r.diagnosis.gpus);
  history.add(r.time, r.diagnosis.gpus);
  for (auto [width, height] : {std::pair{80, 24}, std::pair{200, 50}, std::pair{40, 10}}) {
    TopViewState state;
    TopFrame frame{&r, &history, r.time, 1, "", true};
    const TopScreen screen = compose_top(frame, state, width, height);
    ASSERT_EQ(screen.lines.size(), static_cast<std::size_t>(height)) << width;
    for (const ScreenLine& line : screen.lines) {
      EXPECT_LE(display_columns(text_of(line)), static_cast<std::size_t>(width)) << text_of(line);
    }
    const std::string text = screen_text(screen);
    EXPECT_NE(text.find("gpuclean top"), std::string::npos);
    EXPECT_NE(text.find("DIRTY"), std::string::npos) << text;
    if (height >= 24) {
      EXPECT_NE(text.find("GPU 0"), std::string::npos) << text;
      // One problem, folded: its message on one line, the fix behind `p`.
      EXPECT_NE(text.find("! GPU 0: 14.0 GiB held by orphan pid 300 — p: show"), std::string::npos)
          << text;
      EXPECT_EQ(text.find("fix: gpuclean kill 300"), std::string::npos) << text;
      // At 80 columns COMMAND keeps 30 or more beside GPU%: the heir's note starts there.
      EXPECT_NE(text.find(width >= 200 ? "(heir of dead pid 299)" : "(heir of dead pid 2"),
                std::string::npos)
          << text;
      EXPECT_NE(text.find("q quit"), std::string::npos) << text;
      // Escapes in a command are shown escaped, never sent to the terminal.
      EXPECT_EQ(text.find('\x1b'), std::string::npos);
    }
    // The first row is selected when nothing was.
    EXPECT_EQ(screen.drawn.selected, std::optional<Pid>(300));
    EXPECT_EQ(state.selected, std::nullopt) << "the view changes nothing it is given";
  }
}

TEST(TopScreen, AnAmdOrIntelMachineSaysItsFiguresComeFromTheKernel) {
  // An AMD machine without NVML (GPU 0, amdgpu) and an xe GPU without a used total (GPU 1).
  StatusReport r = report_with_tree();
  r.nvml_state = NvmlState::kAbsent;
  r.diagnosis.gpus[0].gpu.source = Gpu::Source::kDrm;
  r.diagnosis.gpus[0].gpu.driver = "amdgpu";
  GpuReport xe;
  xe.gpu.index = 1;
  xe.gpu.source = Gpu::Source::kDrm;
  xe.gpu.driver = "xe";
  xe.attributed = 3 * kGiB;
  r.diagnosis.gpus.push_back(xe);
  MemoryHistory history;
  history.add(r.time, r.diagnosis.gpus);
  TopViewState state;
  TopFrame frame{&r, &history, r.time, 1, "", true};
  const std::string text = screen_text(compose_top(frame, state, 100, 24));
  EXPECT_NE(text.find("DRM: amdgpu"), std::string::npos) << text;
  EXPECT_EQ(text.find("no NVIDIA driver"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU 1 3.0 GiB attributed; total unknown (xe)"), std::string::npos) << text;
}

TEST(TopScreen, GpuCpuAndRssColumnsShowSortAndGoFirstOnNarrowTerminals) {
  // Issue 37: GPU% from NVML's samples ("-" where unknown, never 0), CPU% since the last
  // refresh, RSS; sortable; at 80 columns RSS gives way, GPU% and CPU% stay (CPU% gave way too
  // before issue 50 narrowed the columns to their content).
  StatusReport r = report_with_tree();
  r.diagnosis.holders[1].activity = HolderActivity{87, 5, std::nullopt};  // worker-a busy
  r.diagnosis.holders[3].activity = HolderActivity{0, 0, 120.0};          // the orphan idle
  r.diagnosis.holders[2].process.rss_pages = 262144;                      // worker-b: 1 GiB
  const CpuPercent cpu = {{{100, 10}, 250.0}, {{102, 30}, 3.0}};
  TopFrame frame{&r, nullptr, r.time, 1, "", true};
  frame.cpu = &cpu;
  TopViewState state;
  state.tree = false;
  std::string text = screen_text(compose_top(frame, state, 200, 30));
  EXPECT_NE(text.find("GPU GPU% CPU%  RSS"), std::string::npos) << text;
  EXPECT_NE(text.find("8.0 GiB 0     87    -    -"), std::string::npos) << text;
  EXPECT_NE(text.find("4.0 GiB 0      -  250    -"), std::string::npos) << text;
  EXPECT_NE(text.find("2.0 GiB 0      -    3 1.0G"), std::string::npos) << text;
  EXPECT_NE(text.find("14.0 GiB 0      0    -    -"), std::string::npos) << text;
  text = screen_text(compose_top(frame, state, 80, 30));
  EXPECT_NE(text.find("GPU%"), std::string::npos) << text;
  EXPECT_NE(text.find("CPU%"), std::string::npos) << text;
  EXPECT_EQ(text.find("RSS"), std::string::npos) << text;
  // Sorted by each: the highest first, the unknown last.
  EXPECT_EQ(pids(top_rows(r.diagnosis, TopSort::kGpu, false, "", &cpu)),
            (std::vector<Pid>{101, 300, 100, 102}));
  EXPECT_EQ(pids(top_rows(r.diagnosis, TopSort::kCpu, false, "", &cpu)),
            (std::vector<Pid>{100, 102, 101, 300}));
  EXPECT_EQ(pids(top_rows(r.diagnosis, TopSort::kRss, false, "", &cpu)).front(), 102);
}

TEST(TopScreen, SparklineShowsUtilisationWhenAsked) {
  StatusReport r = report_with_tree();
  MemoryHistory memory;
  MemoryHistory utilization;
  r.diagnosis.gpus[0].gpu.utilization = 100;
  memory.add(r.time, r.diagnosis.gpus);
  utilization.add(r.time, r.diagnosis.gpus, MemoryHistory::Series::kUtilization);
  ASSERT_NE(utilization.of(0), nullptr);
  EXPECT_DOUBLE_EQ(utilization.of(0)->back().fraction, 1.0);
  EXPECT_LT(memory.of(0)->back().fraction, 0.25);
  TopFrame frame{&r, &memory, r.time, 1, "", true};
  frame.utilization = &utilization;
  TopViewState state;
  const std::string as_memory = screen_text(compose_top(frame, state, 200, 30));
  frame.show_utilization = true;
  const std::string as_utilization = screen_text(compose_top(frame, state, 200, 30));
  // 100% utilisation draws a full cell in the sparkline; 21% memory does not.
  const auto full_cells = [](const std::string& text) {
    std::size_t n = 0;
    for (std::size_t at = text.find("█"); at != std::string::npos; at = text.find("█", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(full_cells(as_utilization), full_cells(as_memory) + 1) << as_utilization;
}

TEST(TopScreen, SelectionStaysOnItsPidAndScrollsIntoView) {
  StatusReport r = report_with_tree();
  for (Pid pid = 1000; pid < 1040; ++pid) {
    r.diagnosis.holders.push_back(holder(pid, 1, HolderClass::kActive, 0, 50, "idle"));
  }
  TopViewState state;
  state.sort = TopSort::kPid;
  state.selected = 1039;  // the last row
  TopFrame frame{&r, nullptr, r.time, 1, "", true};
  const TopScreen screen = compose_top(frame, state, 80, 24);
  const std::string text = screen_text(screen);
  EXPECT_NE(text.find("  1039 alice"), std::string::npos) << "scrolled to the selection:\n" << text;
  EXPECT_EQ(text.find("   100 alice"), std::string::npos) << "the first rows scrolled away";
  EXPECT_GT(screen.drawn.scroll, 0u);
  // The selected row is drawn as one reverse-video segment across the whole width.
  bool found = false;
  for (const ScreenLine& line : screen.lines) {
    if (!line.empty() && line[0].style == Style::kSelected &&
        text_of(line).find("1039") != std::string::npos) {
      found = true;
      EXPECT_EQ(display_columns(text_of(line)), 80u);
    }
  }
  EXPECT_TRUE(found);
}

// Folded, 41 problems are one line; open (`p`), they take at most half of the screen and the
// ones left out are counted.
TEST(TopScreen, ManyProblemsLeaveTheTableMostOfTheScreen) {
  StatusReport r = report_with_tree();
  for (Pid pid = 1000; pid < 1040; ++pid) {
    r.diagnosis.holders.push_back(holder(pid, 1, HolderClass::kOrphan, kGiB, 50, "w"));
    r.diagnosis.problems.push_back(
        {ProblemKind::kOrphan, 0u, pid, fmt::format("orphan {}", pid), "kill"});
  }
  const auto problem_lines = [](const TopScreen& screen) {
    std::size_t n = 0;
    for (const ScreenLine& line : screen.lines) {
      const std::string text = text_of(line);
      if (text.rfind("! ", 0) == 0 || text.rfind("  ! ", 0) == 0) ++n;
    }
    return n;
  };
  TopViewState state;
  TopFrame frame{&r, nullptr, r.time, 1, "", true};
  TopScreen screen = compose_top(frame, state, 200, 50);
  EXPECT_EQ(problem_lines(screen), 1u) << screen_text(screen);
  EXPECT_GE(screen.table_height, 40u) << screen_text(screen);
  state.problems_open = true;
  screen = compose_top(frame, state, 200, 50);
  EXPECT_LE(problem_lines(screen), 13u) << screen_text(screen);
  EXPECT_GE(screen.table_height, 20u) << screen_text(screen);
  EXPECT_NE(screen_text(screen).find("more problems"), std::string::npos);
}

TEST(TopScreen, AProblemThatDoesNotFitIsCountedNeverDroppedUnsaid) {
  // The review found 4 problems at 80x28 shown as 3 with no note.
  StatusReport r = report_with_tree();
  for (Pid pid = 301; pid < 304; ++pid) {
    r.diagnosis.problems.push_back(
        {ProblemKind::kOrphan, 0u, pid, fmt::format("orphan {}", pid), "kill"});
  }
  for (int height : {12, 14, 16, 22, 24, 26, 28, 30, 40}) {
    TopViewState state;
    state.problems_open = true;
    TopFrame frame{&r, nullptr, r.time, 1, "", true};
    const std::string text = screen_text(compose_top(frame, state, 80, height));
    std::size_t shown = 0;
    for (std::size_t at = text.find("\n  ! "); at != std::string::npos;
         at = text.find("\n  ! ", at + 1)) {
      ++shown;
    }
    if (shown < 4) {
      // "(+1 more problem", singular (issue 50: it said "(+1 more problems" on f9d1cde).
      EXPECT_NE(text.find(fmt::format("(+{} more problem{}:", 4 - shown, shown == 3 ? "" : "s")),
                std::string::npos)
          << height << "\n"
          << text;
    }
  }
}

// Issue 50: the classes in top's help are named as the tables name them. Failed on commit
// f9d1cde: the help said "zombie-led" where the tables say "zombie-leader".
TEST(TopScreen, TheHelpNamesTheClassesAsTheTablesDo) {
  std::string help;
  for (const std::string& line : top_help_lines()) help += line + "\n";
  EXPECT_NE(help.find("\n  zombie-leader   its main thread exited"), std::string::npos) << help;
  EXPECT_EQ(help.find("zombie-led "), std::string::npos) << help;
}

TEST(TopRows, APpidCycleStillShowsEveryHolderOnce) {
  StatusReport r = report_with_tree();
  r.diagnosis.holders[0].process.ppid = 102;  // 100's parent is its own child 102
  const auto rows = top_rows(r.diagnosis, TopSort::kPid, true, "");
  std::vector<Pid> got = pids(rows);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<Pid>{100, 101, 102, 300}));
}

TEST(TopScreen, PaneReplacesTheTableAndNvmlTroubleIsNamed) {
  StatusReport r = report_with_tree();
  r.nvml_state = NvmlState::kFailed;
  r.nvml_message = "NVML did not answer in 5 s (the driver may be hung)";
  r.verdict = diagnose::status_verdict(r);
  TopViewState state;
  state.pane = TopPane{"Explain pid 300", {"pid 300 — leftover", "  state S"}, 0, "Esc close"};
  TopFrame frame{&r, nullptr, r.time, 1, "refreshing for 6 s", false};
  const std::string text = screen_text(compose_top(frame, state, 80, 24));
  EXPECT_NE(text.find("NVML not answering: NVML did not answer in 5 s"), std::string::npos) << text;
  EXPECT_NE(text.find("UNKNOWN"), std::string::npos) << "never CLEAN when NVML failed";
  EXPECT_NE(text.find("refreshing for 6 s"), std::string::npos);
  EXPECT_NE(text.find("Explain pid 300"), std::string::npos);
  EXPECT_EQ(text.find("COMMAND"), std::string::npos) << "the pane covers the table";
  EXPECT_NE(text.find("Esc close"), std::string::npos);
  // Another failure is a failure, not a hang.
  r.nvml_message = "nvmlDeviceGetMemoryInfo: GPU is lost";
  EXPECT_EQ(nvml_status_line(r), "NVML failed: nvmlDeviceGetMemoryInfo: GPU is lost");
}

// Issue 35: at 40 columns the table showed PID and USER only (CLASS, MEMORY and COMMAND were cut
// off). Narrow, it drops OWNER, AGE and USER, in that order, before the columns one acts on.
TEST(TopScreen, ANarrowTerminalKeepsPidClassMemoryAndCommand) {
  const StatusReport r = report_with_tree();
  TopViewState state;
  state.tree = false;
  TopFrame frame{&r, nullptr, r.time, 1, "", true};
  const std::string narrow = screen_text(compose_top(frame, state, 40, 24));
  for (const char* column : {"PID", "CLASS", "MEMORY", "COMMAND"}) {
    EXPECT_NE(narrow.find(column), std::string::npos) << column << "\n" << narrow;
  }
  EXPECT_EQ(narrow.find("USER"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("101 active "), std::string::npos) << narrow;
  EXPECT_NE(narrow.find(" 8.0 GiB worker-a"), std::string::npos) << narrow;
  // Negative control: wide, every column is there.
  const std::string wide = screen_text(compose_top(frame, state, 120, 24));
  for (const char* column : {"USER", "AGE", "alice"}) {
    EXPECT_NE(wide.find(column), std::string::npos) << column << "\n" << wide;
  }
  // Between the two: AGE goes before USER.
  const std::string middle = screen_text(compose_top(frame, state, 70, 24));
  EXPECT_NE(middle.find("USER"), std::string::npos) << middle;
  EXPECT_EQ(middle.find("AGE"), std::string::npos) << middle;
}

// Issue 35: the `?` help was cut at the terminal's edge; narrow, it wraps, every word kept.
TEST(TopScreen, TheHelpWrapsToANarrowTerminalAndLosesNoWord) {
  const StatusReport r = report_with_tree();
  const std::vector<std::string> help = top_help_lines();
  auto words = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string word; in >> word;) out.push_back(word);
    return out;
  };
  std::string original;
  for (const std::string& line : help) original += line + "\n";
  for (int width : {40, 60, 100}) {
    TopViewState state;
    state.pane = TopPane{"Help", help, 0, "Esc close"};
    TopFrame frame{&r, nullptr, r.time, 1, "", true};
    const TopScreen screen = compose_top(frame, state, width, 200);
    std::string shown;
    bool in_pane = false;
    for (std::size_t i = 0; i + 1 < screen.lines.size(); ++i) {
      const std::string line = text_of(screen.lines[i]);
      if (!in_pane) {
        in_pane = line.rfind(" Help ", 0) == 0;
        continue;
      }
      EXPECT_LE(display_columns(line), static_cast<std::size_t>(width)) << line;
      EXPECT_EQ(line.find("…"), std::string::npos) << "cut: " << line;
      shown += line + "\n";
    }
    EXPECT_EQ(words(shown), words(original)) << width << "\n" << shown;
  }
}

// The column where `name` starts on the screen's line that has it (display columns), or npos.
std::size_t column_of(const TopScreen& screen, const std::string& name) {
  for (const ScreenLine& line : screen.lines) {
    const std::string text = text_of(line);
    const std::size_t at = text.find(name);
    if (at != std::string::npos) return display_columns(text.substr(0, at));
  }
  return std::string::npos;
}

// The cell of the row whose first word is `pid`, from `column` to the next blank.
std::string cell_at(const TopScreen& screen, Pid pid, std::size_t column) {
  for (const ScreenLine& line : screen.lines) {
    const std::string text = text_of(line);
    const std::size_t first = text.find_first_not_of(' ');
    if (first == std::string::npos ||
        text.compare(first, std::to_string(pid).size() + 1, std::to_string(pid) + " ") != 0) {
      continue;
    }
    if (column >= text.size()) return "";
    return text.substr(column, text.find(' ', column) - column);
  }
  return "(no row)";
}

// Issue 50: the table says which GPUs each holder has memory on, as NVML attributes it. Failed on
// commit f9d1cde: no GPU column (the header had GPU% only).
TEST(TopScreen, TheGpuColumnSaysWhichGpusEachHolderHasMemoryOn) {
  StatusReport r = report_with_tree();
  GpuReport more = r.diagnosis.gpus[0];
  for (unsigned index : {1u, 2u, 3u}) {
    more.gpu.index = index;
    r.diagnosis.gpus.push_back(more);
  }
  r.diagnosis.holders[1].gpu_memory[1] = kGiB;  // 101: GPUs 0 and 1
  r.diagnosis.holders[2].gpu_memory.clear();    // 102: none known
  for (unsigned index : {1u, 2u, 3u}) r.diagnosis.holders[3].gpu_memory[index] = kGiB;  // 300
  TopViewState state;
  state.tree = false;
  TopFrame frame{&r, nullptr, r.time, 1, "", true};
  for (int width : {120, 80}) {
    const TopScreen screen = compose_top(frame, state, width, 30);
    const std::size_t column = column_of(screen, "GPU GPU%");
    ASSERT_NE(column, std::string::npos) << width << "\n" << screen_text(screen);
    EXPECT_EQ(cell_at(screen, 100, column), "0") << screen_text(screen);
    EXPECT_EQ(cell_at(screen, 101, column), "0,1") << screen_text(screen);
    EXPECT_EQ(cell_at(screen, 102, column), "-") << screen_text(screen);
    EXPECT_EQ(cell_at(screen, 300, column), "0-3") << screen_text(screen);
  }
}

// Issue 50: the GPU line carries the vitals `status` prints: the name (without "NVIDIA"),
// utilisation, temperature and power. At 80 columns the line drops the least important (power)
// rather than wrap or cut the others. Failed on commit f9d1cde: no name nor vitals on the line.
TEST(TopScreen, TheGpuLineShowsNameUtilisationTemperatureAndPower) {
  StatusReport r = report_with_tree();
  Gpu& gpu = r.diagnosis.gpus[0].gpu;
  gpu.name = "NVIDIA H200";
  gpu.utilization = 87;
  gpu.temperature_c = 55;
  gpu.power_mw = 640000;
  MemoryHistory history;
  history.add(r.time, r.diagnosis.gpus);
  TopFrame frame{&r, &history, r.time, 1, "", true};
  const auto gpu_line_at = [&](int width) {
    TopViewState state;
    const TopScreen screen = compose_top(frame, state, width, 30);
    for (const ScreenLine& line : screen.lines) {
      if (text_of(line).rfind("GPU 0 ", 0) == 0) return text_of(line);
    }
    return std::string("(no GPU line)\n") + screen_text(screen);
  };
  const std::string wide = gpu_line_at(120);
  for (const char* part : {"GPU 0 H200 [", "30.0 GiB / 140.0 GiB", "attr 28.0 GiB",
                           "unattr 2.0 GiB", "util 87%", "55 °C", "640 W"}) {
    EXPECT_NE(wide.find(part), std::string::npos) << part << "\n" << wide;
  }
  EXPECT_EQ(wide.find("NVIDIA"), std::string::npos) << wide;
  const std::string narrow = gpu_line_at(80);
  EXPECT_LE(display_columns(narrow), 80u) << narrow;
  EXPECT_EQ(narrow.find("…"), std::string::npos) << "cut, not fitted: " << narrow;
  for (const char* part :
       {"GPU 0 H200 [", "30.0 GiB / 140.0 GiB", "unattr 2.0 GiB", "util 87%", "55 °C"}) {
    EXPECT_NE(narrow.find(part), std::string::npos) << part << "\n" << narrow;
  }
  // ASCII without UTF-8, and a GPU whose driver gives no vitals: the memory figures, no vitals.
  gpu.utilization.reset();
  gpu.temperature_c.reset();
  gpu.power_mw.reset();
  frame.unicode = false;
  const std::string plain = gpu_line_at(80);
  EXPECT_NE(plain.find("GPU 0 H200 [##+"), std::string::npos) << plain;
  EXPECT_NE(plain.find("] 30.0 GiB / 140.0 GiB  unattr 2.0 GiB"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("util"), std::string::npos) << plain;
}

// Issue 50: at 80 columns COMMAND had 20 columns while PID took 10. The fixed columns are now as
// wide as what they show (PID: the widest PID, 5 at least) and COMMAND gets the rest, 30 or
// more at 80. Failed on commit f9d1cde: COMMAND began at column 60.
TEST(TopScreen, CommandGetsTheSpareWidthAt80Columns) {
  StatusReport r = report_with_tree();
  const std::string command =
      "python train.py --config configs/llama-70b-finetune.yaml --epochs 100";
  r.diagnosis.holders[3].process.cmdline = {
      "python", "train.py", "--config", "configs/llama-70b-finetune.yaml", "--epochs", "100"};
  r.diagnosis.holders[3].inherited_from.reset();
  TopViewState state;
  TopFrame frame{&r, nullptr, r.time, 1, "", true};
  TopScreen screen = compose_top(frame, state, 80, 24);
  const std::size_t column = column_of(screen, "COMMAND");
  ASSERT_NE(column, std::string::npos) << screen_text(screen);
  EXPECT_GE(80 - column, 30u) << screen_text(screen);
  EXPECT_NE(screen_text(screen).find(command.substr(0, 30)), std::string::npos)
      << screen_text(screen);
  EXPECT_EQ(column_of(screen, "  PID "), 1u) << "PID is 5 columns for 3 digits\n"
                                             << screen_text(screen);
  // A PID of 7 digits widens the column to 7; the rows stay aligned under the header.
  r.diagnosis.holders[3].process.pid = 4194304;
  screen = compose_top(frame, state, 80, 24);
  EXPECT_EQ(column_of(screen, "    PID "), 1u) << screen_text(screen);
  EXPECT_NE(screen_text(screen).find("\n 4194304 alice"), std::string::npos) << screen_text(screen);
  EXPECT_GE(80 - column_of(screen, "COMMAND"), 30u) << screen_text(screen);
}

// Issue 50: each problem was two lines ("! …", "  fix: …") above the table. Folded (the
// default) they are one line with their count, memory and kinds; `p` opens the list with every
// fix, and the key help names `p`. Failed on commit f9d1cde: three problems took six lines.
TEST(TopScreen, ProblemsFoldIntoOneLineAndOpenWithTheirFixes) {
  StatusReport r = report_with_tree();
  r.diagnosis.problems[0].bytes = 14 * kGiB;
  r.diagnosis.problems.push_back({ProblemKind::kOrphan, 0u, 101,
                                  "GPU 0: 2.0 GiB held by orphan pid 101", "gpuclean kill 101",
                                  2 * kGiB});
  r.diagnosis.problems.push_back({ProblemKind::kUnattributed, 0u, std::nullopt,
                                  "GPU 0: 2.0 GiB used by no process seen", "gpuclean explain",
                                  2 * kGiB});
  TopViewState state;
  TopFrame frame{&r, nullptr, r.time, 1, "", true};
  const auto lines_with = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  std::string text = screen_text(compose_top(frame, state, 80, 24));
  EXPECT_NE(text.find("! 3 problems (18.0 GiB): 2 orphans, 1 unattributed — p: show"),
            std::string::npos)
      << text;
  EXPECT_EQ(lines_with(text, "! "), 1u) << text;
  EXPECT_EQ(lines_with(text, "fix: "), 0u) << text;
  EXPECT_NE(text.find("p problems"), std::string::npos) << "the key help names p\n" << text;
  state.problems_open = true;  // `p`
  text = screen_text(compose_top(frame, state, 80, 24));
  EXPECT_NE(text.find("— p: fold"), std::string::npos) << text;
  for (const char* line :
       {"held by orphan pid 300", "fix: gpuclean kill 300", "held by orphan pid 101",
        "fix: gpuclean kill 101", "used by no process seen", "fix: gpuclean explain"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_NE(text.find("p fold problems"), std::string::npos) << text;
  // Negative control: no problem, no problem line and no `p` in the key help.
  r.diagnosis.problems.clear();
  text = screen_text(compose_top(frame, state, 80, 24));
  EXPECT_EQ(lines_with(text, "! "), 0u) << text;
  EXPECT_EQ(text.find("p problems"), std::string::npos) << text;
}

TEST(Sparkline, PlacesSamplesInTheirSecondAndScalesToEightLevels) {
  std::deque<MemoryHistory::Sample> samples = {{940, 0.0}, {970, 0.5}, {999.5, 1.0}};
  const std::string ascii = sparkline(samples, 1000, 6, false);
  ASSERT_EQ(ascii.size(), 6u);
  EXPECT_EQ(ascii[0], '_') << "0 % is the lowest level, '_' in ASCII (blank: no sample)";
  EXPECT_EQ(ascii[3], '=') << "50 % in the middle cell";
  EXPECT_EQ(ascii[5], '#') << "100 % in the last cell";
  EXPECT_EQ(ascii[1], ' ');
  const std::string blocks = sparkline(samples, 1000, 6, true);
  EXPECT_NE(blocks.find("█"), std::string::npos);
  EXPECT_EQ(display_columns(blocks), 6u);
  // Samples older than a minute are dropped from the history.
  MemoryHistory history;
  GpuReport g;
  g.gpu.index = 0;
  g.gpu.memory = GpuMemory{100, 50, 50, std::nullopt};
  history.add(1000, {g});
  history.add(1061, {g});
  ASSERT_NE(history.of(0), nullptr);
  EXPECT_EQ(history.of(0)->size(), 1u);
  EXPECT_EQ(history.of(1), nullptr);
}

}  // namespace
}  // namespace gpuclean::output
