#include "output/top_view.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <ctime>
#include <string_view>

#include <fmt/format.h>

#include "core/units.h"
#include "output/escape.h"
#include "output/owner_text.h"
#include "output/text_width.h"
#include "output/tree_text.h"
#include "output/who_view.h"

namespace gpuclean::output {

void MemoryHistory::add(double time, const std::vector<GpuReport>& gpus) {
  for (const GpuReport& report : gpus) {
    const Gpu& gpu = report.gpu;
    if (!gpu.memory || gpu.memory->total == 0) continue;
    auto& samples = samples_[gpu.index];
    samples.push_back(
        {time, static_cast<double>(gpu.memory->used) / static_cast<double>(gpu.memory->total)});
  }
  for (auto& [index, samples] : samples_) {
    while (!samples.empty() && samples.front().time < time - kSeconds) samples.pop_front();
  }
}

const std::deque<MemoryHistory::Sample>* MemoryHistory::of(unsigned gpu) const {
  auto it = samples_.find(gpu);
  return it == samples_.end() ? nullptr : &it->second;
}

std::string sparkline(const std::deque<MemoryHistory::Sample>& samples, double now, int width,
                      bool unicode) {
  if (width <= 0) return "";
  static constexpr std::array<const char*, 8> kBlocks = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static constexpr std::string_view kAscii = "_.:-=+*#";
  std::vector<double> highest(static_cast<std::size_t>(width), -1);
  const double start = now - MemoryHistory::kSeconds;
  for (const auto& sample : samples) {
    if (sample.time < start || sample.time > now) continue;
    auto cell = static_cast<int>((sample.time - start) / MemoryHistory::kSeconds * width);
    cell = std::clamp(cell, 0, width - 1);
    auto& h = highest[static_cast<std::size_t>(cell)];
    h = std::max(h, sample.fraction);
  }
  std::string line;
  for (double h : highest) {
    if (h < 0) {
      line += ' ';
      continue;
    }
    const auto level = std::clamp(static_cast<int>(std::lround(h * 7)), 0, 7);
    if (unicode) {
      line += kBlocks.at(static_cast<std::size_t>(level));
    } else {
      line += kAscii.at(static_cast<std::size_t>(level));
    }
  }
  return line;
}

const char* to_string(TopSort sort) {
  switch (sort) {
    case TopSort::kMemory:
      return "memory";
    case TopSort::kAge:
      return "age";
    case TopSort::kPid:
      return "pid";
  }
  return "memory";
}

TopSort next(TopSort sort) {
  switch (sort) {
    case TopSort::kMemory:
      return TopSort::kAge;
    case TopSort::kAge:
      return TopSort::kPid;
    case TopSort::kPid:
      return TopSort::kMemory;
  }
  return TopSort::kMemory;
}

namespace {

Bytes total_memory(const Holder& h) {
  Bytes total = 0;
  for (const auto& [gpu, bytes] : h.gpu_memory) total += bytes;
  return total;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool matches(const Holder& h, const std::string& filter) {
  if (filter.empty()) return true;
  const std::string needle = lower(filter);
  const ProcessInfo& p = h.process;
  for (const std::string& field :
       {std::to_string(p.pid), p.user, class_label(h), command_label(p, 400)}) {
    if (lower(field).find(needle) != std::string::npos) return true;
  }
  return false;
}

// Whether a comes before b: the largest memory, the oldest, or the lowest PID first; ties by PID.
bool before(const Holder& a, const Holder& b, TopSort sort) {
  switch (sort) {
    case TopSort::kMemory: {
      const Bytes ma = total_memory(a);
      const Bytes mb = total_memory(b);
      if (ma != mb) return ma > mb;
      break;
    }
    case TopSort::kAge:
      if (a.process.start_ticks != b.process.start_ticks) {
        return a.process.start_ticks < b.process.start_ticks;
      }
      break;
    case TopSort::kPid:
      break;
  }
  return a.process.pid < b.process.pid;
}

}  // namespace

std::vector<TopRow> top_rows(const Diagnosis& diagnosis, TopSort sort, bool tree,
                             const std::string& filter) {
  std::vector<const Holder*> shown;
  for (const Holder& h : diagnosis.holders) {
    if (matches(h, filter)) shown.push_back(&h);
  }
  auto order = [sort](const Holder* a, const Holder* b) { return before(*a, *b, sort); };
  std::sort(shown.begin(), shown.end(), order);
  std::vector<TopRow> rows;
  if (!tree) {
    for (const Holder* h : shown) rows.push_back({h, 0});
    return rows;
  }
  // Children under their parent holder; a holder whose parent is not shown is a root, as is
  // one on a cycle of PPIDs (parents are read at different times: a rolling scan, reparenting).
  for (const auto& [h, depth] : tree_order(shown)) rows.push_back({h, depth});
  return rows;
}

std::string nvml_status_line(const StatusReport& report) {
  if (report.nvml_state != NvmlState::kFailed) return "";
  // The helper's timeout says so in these words (collect/gpu_sampler.cpp): a hung driver.
  const bool timed_out = report.nvml_message.rfind("NVML did not answer", 0) == 0;
  return (timed_out ? "NVML not answering: " : "NVML failed: ") +
         escape_terminal(report.nvml_message);
}

namespace {

std::size_t columns_of(const ScreenLine& line) {
  std::size_t total = 0;
  for (const Segment& s : line) total += display_columns(s.text);
  return total;
}

// The line cut to `width` columns; with `pad`, filled with spaces to it (a selected row is
// reverse video across the whole width).
ScreenLine fit(ScreenLine line, std::size_t width, bool pad = false) {
  ScreenLine out;
  std::size_t used = 0;
  for (Segment& s : line) {
    if (used >= width) break;
    const std::size_t columns = display_columns(s.text);
    if (used + columns > width) s.text = cut_to_columns(s.text, width - used);
    used += display_columns(s.text);
    out.push_back(std::move(s));
  }
  if (pad && used < width) {
    const Style style = out.empty() ? Style::kNormal : out.back().style;
    out.push_back({std::string(width - used, ' '), style});
  }
  return out;
}

Style class_style(HolderClass klass) {
  switch (klass) {
    case HolderClass::kActive:
      return Style::kGreen;
    case HolderClass::kMonitor:
    case HolderClass::kZombie:
      return Style::kDim;
    default:
      return Style::kRed;
  }
}

std::string clock_time(double unix_seconds) {
  const auto seconds = static_cast<std::time_t>(unix_seconds);
  std::tm local{};
  ::localtime_r(&seconds, &local);
  char text[16];
  if (std::strftime(text, sizeof(text), "%H:%M:%S", &local) == 0) return "??:??:??";
  return text;
}

ScreenLine header_line(const TopFrame& frame) {
  ScreenLine line{{"gpuclean top", Style::kBold}};
  if (frame.report == nullptr) {
    line.push_back({"  collecting…", Style::kDim});
    return line;
  }
  const StatusReport& report = *frame.report;
  line.push_back(
      {"  " + cut_to_columns(escape_terminal(report.host), 30) + "  " + clock_time(report.time),
       Style::kNormal});
  const Verdict verdict = verdict_of(report);
  const std::size_t errors = static_cast<std::size_t>(
      std::count_if(report.diagnosis.problems.begin(), report.diagnosis.problems.end(),
                    [](const Problem& p) { return p.severity == Severity::kError; }));
  std::string word = verdict == Verdict::kClean   ? "CLEAN"
                     : verdict == Verdict::kDirty ? "DIRTY"
                                                  : "UNKNOWN";
  line.push_back({"  ", Style::kNormal});
  line.push_back({word, verdict == Verdict::kClean   ? Style::kGreen
                        : verdict == Verdict::kDirty ? Style::kRed
                                                     : Style::kYellow});
  if (errors > 0) {
    line.push_back(
        {fmt::format(" ({} problem{})", errors, errors == 1 ? "" : "s"), Style::kNormal});
  }
  // A late refresh before the interval: it says the figures are getting old.
  if (!frame.refresh_note.empty()) line.push_back({"  " + frame.refresh_note, Style::kYellow});
  line.push_back({fmt::format("  every {:g} s", frame.delay_seconds), Style::kDim});
  return line;
}

// "driver 580.159.04, CUDA 13.0 · 3 holders" or what is wrong with NVML.
ScreenLine source_line(const StatusReport& report) {
  if (auto failing = nvml_status_line(report); !failing.empty()) {
    return {{failing, Style::kYellow}};
  }
  std::string text;
  switch (report.nvml_state) {
    case NvmlState::kPresent:
      text = "driver " + escape_terminal(report.driver_version);
      if (report.cuda_driver_version) {
        text += fmt::format(", CUDA {}.{}", *report.cuda_driver_version / 1000,
                            (*report.cuda_driver_version % 1000) / 10);
      }
      break;
    case NvmlState::kAbsent:
      text = "no NVIDIA driver (NVML absent): device files only";
      break;
    case NvmlState::kDisabled:
      text = "NVML off (--no-nvml): device files only";
      break;
    case NvmlState::kFailed:
      break;
  }
  text += fmt::format("  ·  {} holder{}", report.diagnosis.holders.size(),
                      report.diagnosis.holders.size() == 1 ? "" : "s");
  return {{text, Style::kDim}};
}

// "GPU 0 [████▒▒····] 76.0 GiB / 139.8 GiB  attr 70.0 GiB  unattr 6.0 GiB  ▁▂▃▅▇"
ScreenLine gpu_line(const GpuReport& r, const TopFrame& frame, std::size_t width) {
  const Gpu& gpu = r.gpu;
  std::string label = fmt::format("GPU {} ", gpu.index);
  if (!gpu.memory) return {{label, Style::kBold}, {"memory unknown", Style::kYellow}};
  const GpuMemory& m = *gpu.memory;
  const std::string figures = fmt::format("{} / {}", format_bytes(m.used), format_bytes(m.total));
  const std::string split =
      fmt::format("  attr {}  unattr {}", format_bytes(r.attributed), format_bytes(r.unattributed));
  // The bar and the sparkline share what is left: a third to the bar, the rest to the minute.
  const std::size_t fixed =
      display_columns(label) + 2 + 1 + display_columns(figures) + display_columns(split) + 2;
  const std::size_t room = width > fixed ? width - fixed : 0;
  const int bar_cells = static_cast<int>(std::clamp<std::size_t>(room / 3, 6, 30));
  std::string bar = memory_bar(m.total, r.attributed, r.unattributed, bar_cells);
  if (!frame.unicode) {
    // The bar's cells as ASCII: '#' attributed, '+' unattributed, '.' free.
    std::string ascii;
    for (std::size_t i = 0; i < bar.size();) {
      if (bar.compare(i, 3, "█") == 0) {
        ascii += '#', i += 3;
      } else if (bar.compare(i, 3, "▒") == 0) {
        ascii += '+', i += 3;
      } else if (bar.compare(i, 2, "·") == 0) {
        ascii += '.', i += 2;
      } else {
        ascii += bar[i], i += 1;
      }
    }
    bar = ascii;
  }
  ScreenLine line{{label, Style::kBold},
                  {bar, r.unattributed > 0 ? Style::kYellow : Style::kGreen},
                  {" " + figures, Style::kNormal},
                  {split, r.unattributed > 0 ? Style::kYellow : Style::kDim}};
  const std::size_t used = columns_of(line);
  if (frame.history != nullptr && width > used + 3) {
    if (const auto* samples = frame.history->of(gpu.index)) {
      const int cells = static_cast<int>(std::min<std::size_t>(width - used - 2, 60));
      line.push_back({"  " + sparkline(*samples, frame.now, cells, frame.unicode), Style::kDim});
    }
  }
  return line;
}

// Columns before COMMAND: "  " PID(8) "  " USER(10) " " CLASS(13) " " AGE(6) " " MEMORY(9) "  "
std::string row_prefix(const std::string& pid, const std::string& user, const std::string& klass,
                       const std::string& age, const std::string& memory) {
  return fmt::format("  {:>8}  {:<10} {:<13} {:>6} {:>9}  ", pid, user, klass, age, memory);
}

ScreenLine table_header(const TopViewState& state, std::size_t owner_width) {
  std::string text = row_prefix("PID", "USER", "CLASS", "AGE", "MEMORY");
  if (owner_width > 0) text += fmt::format("{:<{}}  ", "OWNER", owner_width);
  text += "COMMAND";
  std::string how =
      fmt::format("  [sort: {}{}{}]", to_string(state.sort), state.tree ? ", tree" : ", flat",
                  state.filter.empty() ? "" : ", filter: " + state.filter);
  return {{text, Style::kBold}, {escape_terminal(how), Style::kDim}};
}

ScreenLine holder_line(const TopRow& row, double now, std::size_t owner_width, bool selected) {
  const Holder& h = *row.holder;
  const ProcessInfo& p = h.process;
  const Bytes memory = total_memory(h);
  const std::string age = p.start_time ? format_age(now - *p.start_time) : "?";
  std::string command = h.visible ? command_label(p, 400) : "(not visible from this PID namespace)";
  // Whose memory it holds matters more than the end of its command line: first.
  if (h.mps_client) command = "(MPS client) " + command;
  if (h.inherited_from)
    command = fmt::format("(heir of dead pid {}) ", *h.inherited_from) + command;
  const std::string indent = tree_indent(row.depth) + depth_mark(row.depth);
  const std::string user = cut_to_columns(escape_terminal(h.visible ? p.user : "?"), 10);
  const std::string label = class_label(h);
  const std::string mem = memory > 0 ? format_bytes(memory) : "-";
  const std::string owner =
      owner_width > 0 ? output::owner_cell(p.owner, owner_width, 2) : std::string();
  if (selected) {
    return {{row_prefix(std::to_string(p.pid), user, label, age, mem) + owner + indent + command,
             Style::kSelected}};
  }
  ScreenLine line{{fmt::format("  {:>8}  {:<10} ", p.pid, user), Style::kNormal},
                  {fmt::format("{:<13}", label), class_style(h.klass)},
                  {fmt::format(" {:>6} {:>9}  ", age, mem), Style::kNormal}};
  if (!owner.empty()) line.push_back({owner, Style::kDim});
  line.push_back({indent + command, Style::kNormal});
  return line;
}

std::string key_help(const TopViewState& state) {
  if (!state.prompt.empty()) return state.prompt + "_";
  if (state.pane) return state.pane->keys;
  if (!state.message.empty()) return state.message;
  return "q quit  ↑↓/jk select  e explain  K kill  t tree  s sort  / filter  g GPUs  ? help";
}

}  // namespace

std::vector<std::string> top_help_lines() {
  return {
      "Keys",
      "  ↑ ↓  j k        select a holder (PgUp PgDn Home End)",
      "  e               explain the selected process: why it holds memory, and the fix",
      "  K  (or F9)      kill the selected process and its descendants: shows the plan, asks",
      "                  y/N, ends them as `gpuclean kill PID` does and verifies the memory",
      "  t               holders as process trees, or flat",
      "  s               sort by memory, age or PID",
      "  /               filter holders by PID, user, class or command (empty: all)",
      "  g               choose the GPUs shown (0,2 or 0-3 or all)",
      "  ?               this help",
      "  q  Esc          close a pane; q quits",
      "",
      "Classes",
      "  active          a live process using the GPU",
      "  orphan          its parent died (a worker of a killed server)",
      "  heir            holds the memory of a dead process NVML still names",
      "  zombie-led      its main thread exited, other threads hold the device",
      "  stuck           a thread is stuck in the driver or its memory map is locked",
      "",
      "Every process's files are re-read at least once per --full-scan period; new processes,",
      "holders and the PIDs NVML lists are re-read on every refresh.",
  };
}

TopScreen compose_top(const TopFrame& frame, TopViewState& state, int width_in, int height_in) {
  const auto width = static_cast<std::size_t>(std::max(width_in, 1));
  const auto height = static_cast<std::size_t>(std::max(height_in, 1));
  TopScreen screen;
  auto& lines = screen.lines;
  auto add = [&lines, width](ScreenLine line, bool pad = false) {
    lines.push_back(fit(std::move(line), width, pad));
  };
  add(header_line(frame));
  const std::string footer = key_help(state);
  if (frame.report == nullptr) {
    while (lines.size() + 1 < height) lines.emplace_back();
    add({{footer, Style::kDim}});
    lines.resize(height);
    return screen;
  }
  const StatusReport& report = *frame.report;
  const Diagnosis& d = report.diagnosis;
  add(source_line(report));

  // What the table needs at least: its header and three rows, and the footer.
  constexpr std::size_t kTableMinimum = 4;
  const std::size_t budget =
      height > lines.size() + kTableMinimum + 1 ? height - lines.size() - kTableMinimum - 1 : 0;
  // GPUs first, then problems, each within what the table leaves.
  const std::size_t gpu_room = std::min(d.gpus.size(), std::max<std::size_t>(budget / 2, 1));
  for (std::size_t i = 0; i < d.gpus.size() && i < gpu_room && lines.size() + 1 < height; ++i) {
    if (i + 1 == gpu_room && d.gpus.size() > gpu_room) {
      add({{fmt::format("(+{} more GPUs: g chooses which are shown)", d.gpus.size() - i),
            Style::kDim}});
      break;
    }
    add(gpu_line(d.gpus[i], frame, width));
  }
  // Problems take at most a quarter of the screen: with 40 of them the holders' table is what
  // one acts on (bench/top_bench.sh's crowd showed 3 rows of 40 at 200x50 before).
  const std::size_t problem_room =
      std::min(budget > gpu_room ? budget - gpu_room : 0, std::max<std::size_t>(height / 4, 2));
  std::size_t used_for_problems = 0;
  for (std::size_t i = 0; i < d.problems.size(); ++i) {
    const Problem& p = d.problems[i];
    // Two lines for it, and one for "+N more" when others follow: never one dropped unsaid.
    const bool more_follow = i + 1 < d.problems.size();
    if (used_for_problems + 2 + (more_follow ? 1 : 0) > problem_room) {
      if (used_for_problems < problem_room) {
        add({{fmt::format("(+{} more problems: gpuclean status lists them all)",
                          d.problems.size() - i),
              Style::kDim}});
      }
      break;
    }
    add({{"! ", p.severity == Severity::kError ? Style::kRed : Style::kYellow},
         {escape_terminal(p.message), Style::kNormal}});
    add({{"  fix: ", Style::kDim}, {escape_terminal(p.fix), Style::kNormal}});
    used_for_problems += 2;
  }

  std::vector<const std::optional<Owner>*> owners;
  for (const Holder& h : d.holders) owners.push_back(&h.process.owner);
  const std::size_t owner_width = owner_column_width(owners);
  screen.rows = top_rows(d, state.sort, state.tree, state.filter);
  const std::size_t area = height > lines.size() + 2 ? height - lines.size() - 2 : 0;

  if (state.pane) {
    TopPane& pane = *state.pane;
    add({{" " + pane.title + " ", Style::kSelected}}, true);
    const std::size_t shown = area;
    if (pane.lines.size() > shown && pane.scroll > pane.lines.size() - shown) {
      pane.scroll = pane.lines.size() - shown;
    }
    if (pane.lines.size() <= shown) pane.scroll = 0;
    for (std::size_t i = 0; i < shown; ++i) {
      const std::size_t at = pane.scroll + i;
      add({{at < pane.lines.size() ? pane.lines[at] : "", Style::kNormal}});
    }
  } else {
    add(table_header(state, owner_width));
    screen.table_height = area;
    // The selection: the same PID as before, else the first row.
    std::size_t selected = 0;
    bool found = false;
    for (std::size_t i = 0; i < screen.rows.size(); ++i) {
      if (state.selected && screen.rows[i].holder->process.pid == *state.selected) {
        selected = i;
        found = true;
      }
    }
    if (!found) {
      state.selected =
          screen.rows.empty()
              ? std::nullopt
              : std::optional<Pid>(
                    screen.rows[std::min(selected, screen.rows.size() - 1)].holder->process.pid);
    }
    if (selected < state.scroll) state.scroll = selected;
    if (area > 0 && selected >= state.scroll + area) state.scroll = selected + 1 - area;
    if (screen.rows.size() <= area) state.scroll = 0;
    for (std::size_t i = 0; i < area; ++i) {
      const std::size_t at = state.scroll + i;
      if (at < screen.rows.size()) {
        const bool is_selected = state.selected && at == selected;
        add(holder_line(screen.rows[at], frame.now, owner_width, is_selected), is_selected);
      } else if (i == 0 && screen.rows.empty()) {
        add({{state.filter.empty() ? "  (no process holds a selected device)"
                                   : "  (no holder matches the filter)",
              Style::kDim}});
      } else {
        lines.emplace_back();
      }
    }
  }
  while (lines.size() + 1 < height) lines.emplace_back();
  lines.resize(height - 1);
  add({{footer, state.prompt.empty() && state.message.empty() ? Style::kDim : Style::kBold}});
  return screen;
}

}  // namespace gpuclean::output
