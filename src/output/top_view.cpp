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

void MemoryHistory::add(double time, const std::vector<GpuReport>& gpus, Series series) {
  constexpr double kPercent = 100.0;
  for (const GpuReport& report : gpus) {
    const Gpu& gpu = report.gpu;
    if (series == Series::kUtilization) {
      if (gpu.utilization) samples_[gpu.index].push_back({time, *gpu.utilization / kPercent});
      continue;
    }
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
    case TopSort::kGpu:
      return "gpu%";
    case TopSort::kCpu:
      return "cpu%";
    case TopSort::kRss:
      return "rss";
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
      return TopSort::kGpu;
    case TopSort::kGpu:
      return TopSort::kCpu;
    case TopSort::kCpu:
      return TopSort::kRss;
    case TopSort::kRss:
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

// SM% where known; -1 sorts an unknown one after every known one.
int gpu_percent(const Holder& h) {
  return h.activity ? static_cast<int>(h.activity->sm) : -1;
}

double cpu_percent(const Holder& h, const CpuPercent* cpu) {
  if (cpu == nullptr) return -1;
  const auto it = cpu->find({h.process.pid, h.process.start_ticks});
  return it == cpu->end() ? -1 : it->second;
}

// Whether a comes before b: the largest memory, GPU%, CPU% or RSS, the oldest, or the lowest
// PID first; ties by PID.
bool before(const Holder& a, const Holder& b, TopSort sort, const CpuPercent* cpu) {
  switch (sort) {
    case TopSort::kMemory: {
      const Bytes ma = total_memory(a);
      const Bytes mb = total_memory(b);
      if (ma != mb) return ma > mb;
      break;
    }
    case TopSort::kGpu:
      if (gpu_percent(a) != gpu_percent(b)) return gpu_percent(a) > gpu_percent(b);
      break;
    case TopSort::kCpu:
      if (cpu_percent(a, cpu) != cpu_percent(b, cpu))
        return cpu_percent(a, cpu) > cpu_percent(b, cpu);
      break;
    case TopSort::kRss:
      if (a.process.rss_pages != b.process.rss_pages) {
        return a.process.rss_pages > b.process.rss_pages;
      }
      break;
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
                             const std::string& filter, const CpuPercent* cpu) {
  std::vector<const Holder*> shown;
  for (const Holder& h : diagnosis.holders) {
    if (matches(h, filter)) shown.push_back(&h);
  }
  auto order = [sort, cpu](const Holder* a, const Holder* b) { return before(*a, *b, sort, cpu); };
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
  const auto drm =
      std::find_if(report.diagnosis.gpus.begin(), report.diagnosis.gpus.end(),
                   [](const GpuReport& g) { return g.gpu.source == Gpu::Source::kDrm; });
  if (drm != report.diagnosis.gpus.end()) {
    // An AMD or Intel GPU: its figures come from the kernel, NVML or not.
    const std::string from_kernel = "DRM: " + escape_terminal(drm->gpu.driver);
    text = report.nvml_state == NvmlState::kPresent ? text + "  ·  " + from_kernel : from_kernel;
  }
  text += fmt::format("  ·  {} holder{}", report.diagnosis.holders.size(),
                      report.diagnosis.holders.size() == 1 ? "" : "s");
  return {{text, Style::kDim}};
}

// "GPU 0 [████▒▒····] 76.0 GiB / 139.8 GiB  attr 70.0 GiB  unattr 6.0 GiB  ▁▂▃▅▇"
ScreenLine gpu_line(const GpuReport& r, const TopFrame& frame, std::size_t width) {
  const Gpu& gpu = r.gpu;
  std::string label = fmt::format("GPU {} ", gpu.index);
  if (!gpu.memory && gpu.source == Gpu::Source::kDrm) {
    // i915 and xe give no used total: what the clients hold is all there is.
    return {{label, Style::kBold},
            {fmt::format("{} attributed; total unknown ({})", format_bytes(r.attributed),
                         escape_terminal(gpu.driver)),
             Style::kDim}};
  }
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
  const MemoryHistory* history = frame.show_utilization ? frame.utilization : frame.history;
  if (history != nullptr && width > used + 3) {
    if (const auto* samples = history->of(gpu.index)) {
      const int cells = static_cast<int>(std::min<std::size_t>(width - used - 2, 60));
      line.push_back({"  " + sparkline(*samples, frame.now, cells, frame.unicode), Style::kDim});
    }
  }
  return line;
}

// The holder table's columns for a terminal `width` wide. In full: "  " PID(8) "  " USER(10) " "
// CLASS(13) " " AGE(6) " " MEMORY(9) " " GPU%(4) " " CPU%(5) " " RSS(6) "  " [OWNER "  "]
// COMMAND. Where COMMAND would get fewer than kCommandRoom columns, OWNER goes first, then RSS,
// CPU%, AGE, GPU%, then USER, then the margins narrow and CLASS is cut at 10: PID, CLASS, MEMORY
// and the start of COMMAND are what one acts on (at 40 columns COMMAND keeps 10; it had none,
// and CLASS was cut off, before).
struct TableLayout {
  bool narrow = false;  // one-column margins, CLASS cut at 10
  bool user = true;
  bool age = true;
  bool gpu = true;  // GPU%: the SM utilisation NVML samples for it
  bool cpu = true;  // CPU%: host CPU since the last refresh
  bool rss = true;  // resident host memory
  std::size_t owner_width = 0;

  [[nodiscard]] std::size_t class_width() const { return narrow ? 10 : 13; }
  [[nodiscard]] std::size_t prefix_width() const {
    const std::size_t gap = narrow ? 1 : 2;
    std::size_t total = gap + 8 + gap + class_width() + 1 + 9 + gap;
    if (user) total += 11;
    if (age) total += 7;
    if (gpu) total += 5;
    if (cpu) total += 6;
    if (rss) total += 7;
    if (owner_width > 0) total += owner_width + 2;
    return total;
  }
};

constexpr std::size_t kCommandRoom = 20;

TableLayout table_layout(std::size_t width, std::size_t owner_width) {
  TableLayout layout;
  layout.owner_width = owner_width;
  const auto fits = [&] { return layout.prefix_width() + kCommandRoom <= width; };
  if (!fits()) layout.owner_width = 0;
  if (!fits()) layout.rss = false;
  if (!fits()) layout.cpu = false;
  if (!fits()) layout.age = false;
  if (!fits()) layout.gpu = false;
  if (!fits()) layout.user = false;
  if (!fits()) layout.narrow = true;
  return layout;
}

// The cells before COMMAND, as three parts: before CLASS, CLASS (padded: it has its own colour),
// after it.
struct RowParts {
  std::string before;
  std::string klass;
  std::string after;
};

// One row's cells as text, before the layout drops some.
struct RowCells {
  std::string pid, user, klass, age, memory, gpu, cpu, rss, owner;
};

RowParts row_parts(const TableLayout& layout, const RowCells& cells) {
  const std::string gap(layout.narrow ? 1 : 2, ' ');
  RowParts parts;
  parts.before = gap + fmt::format("{:>8}", cells.pid) + gap;
  if (layout.user) parts.before += fmt::format("{:<10} ", cut_to_columns(cells.user, 10));
  const std::string cut = cut_to_columns(cells.klass, layout.class_width());
  parts.klass = cut + std::string(layout.class_width() - display_columns(cut), ' ');
  parts.after = " ";
  if (layout.age) parts.after += fmt::format("{:>6} ", cells.age);
  parts.after += fmt::format("{:>9}", cells.memory);
  if (layout.gpu) parts.after += fmt::format(" {:>4}", cells.gpu);
  if (layout.cpu) parts.after += fmt::format(" {:>5}", cells.cpu);
  if (layout.rss) parts.after += fmt::format(" {:>6}", cells.rss);
  parts.after += gap + cells.owner;
  return parts;
}

ScreenLine table_header(const TopViewState& state, const TableLayout& layout) {
  const std::string owner =
      layout.owner_width > 0 ? fmt::format("{:<{}}  ", "OWNER", layout.owner_width) : "";
  const RowParts parts =
      row_parts(layout, {"PID", "USER", "CLASS", "AGE", "MEMORY", "GPU%", "CPU%", "RSS", owner});
  std::string text = parts.before + parts.klass + parts.after + "COMMAND";
  std::string how =
      // "[by memory": the sort key is what stays readable where COMMAND keeps its 20 columns.
      fmt::format("  [by {}{}{}]", to_string(state.sort), state.tree ? ", tree" : ", flat",
                  state.filter.empty() ? "" : ", filter: " + state.filter);
  return {{text, Style::kBold}, {escape_terminal(how), Style::kDim}};
}

// "1.2G", "512M", "64K": RSS in six columns at most.
std::string compact_bytes(Bytes bytes) {
  constexpr double kUnit = 1024.0;
  auto value = static_cast<double>(bytes);
  const char* units = "KMGTP";
  value /= kUnit;
  std::size_t unit = 0;
  while (value >= kUnit && unit + 1 < 5) {
    value /= kUnit;
    ++unit;
  }
  return value < 10 ? fmt::format("{:.1f}{}", value, units[unit])
                    : fmt::format("{:.0f}{}", value, units[unit]);
}

ScreenLine holder_line(const TopRow& row, const TopFrame& frame, const TableLayout& layout,
                       bool selected) {
  const double now = frame.now;
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
  const std::string mem = memory > 0 ? format_bytes(memory) : "-";
  const std::string owner =
      layout.owner_width > 0 ? output::owner_cell(p.owner, layout.owner_width, 2) : std::string();
  const double cpu = cpu_percent(h, frame.cpu);
  const RowParts parts = row_parts(
      layout,
      {std::to_string(p.pid), escape_terminal(h.visible ? p.user : "?"), class_label(h), age, mem,
       h.activity ? fmt::format("{}", h.activity->sm) : "-",
       cpu >= 0 ? fmt::format("{:.0f}", cpu) : "-",
       h.visible && p.rss_pages > 0 ? compact_bytes(p.rss_pages * frame.page_size) : "-", ""});
  if (selected) {
    return {
        {parts.before + parts.klass + parts.after + owner + indent + command, Style::kSelected}};
  }
  ScreenLine line{{parts.before, Style::kNormal},
                  {parts.klass, class_style(h.klass)},
                  {parts.after, Style::kNormal}};
  if (!owner.empty()) line.push_back({owner, Style::kDim});
  line.push_back({indent + command, Style::kNormal});
  return line;
}

// A pane's lines wrapped to `width` (a narrow terminal cut the help's descriptions off). A line
// "  KEY      description" (its widest run of spaces marks the description's column) keeps that
// column while the description gets kDescriptionRoom columns there; else KEY stands alone and
// the description, and the lines continuing it, follow 4 columns in. Other lines wrap at their
// own indent. Lines that fit are left as they are.
std::vector<std::string> wrap_pane_lines(const std::vector<std::string>& lines, std::size_t width) {
  constexpr std::size_t kDescriptionRoom = 24;
  std::vector<std::string> out;
  std::size_t moved_from = 0;  // the description column a key line gave up, and where it went
  std::size_t moved_to = 0;
  for (const std::string& line : lines) {
    const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
    if (display_columns(line) <= width) {
      out.push_back(line);
      moved_from = 0;
      continue;
    }
    // The widest run of two or more spaces after the indent.
    std::size_t gap = std::string::npos;
    std::size_t gap_length = 1;
    for (std::size_t at = line.find("  ", indent); at != std::string::npos;) {
      const std::size_t end = std::min(line.find_first_not_of(' ', at), line.size());
      if (end - at > gap_length && end < line.size()) {
        gap = at;
        gap_length = end - at;
      }
      at = line.find("  ", end);
    }
    std::string first_prefix(indent, ' ');
    std::size_t column = display_columns(line.substr(0, indent));
    std::string_view body = std::string_view(line).substr(indent);
    if (indent == moved_from && gap == std::string::npos) column = moved_to;  // a continuation
    if (gap != std::string::npos) {
      const std::size_t description = gap + gap_length;
      column = display_columns(line.substr(0, description));
      first_prefix = line.substr(0, description);
      body = std::string_view(line).substr(description);
      moved_from = 0;
      if (column + kDescriptionRoom > width) {
        out.push_back(line.substr(0, gap));
        moved_from = column;
        column = width > indent + 4 + kDescriptionRoom / 2 ? indent + 4 : 0;
        moved_to = column;
        first_prefix = std::string(column, ' ');
      }
    }
    if (column != display_columns(first_prefix)) first_prefix = std::string(column, ' ');
    bool first = true;
    for (const std::string& part : wrap_words(body, width > column ? width - column : 1)) {
      out.push_back((first ? first_prefix : std::string(column, ' ')) + part);
      first = false;
    }
  }
  return out;
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
      "  s               sort by memory, GPU%, CPU%, RSS, age or PID",
      "  u               sparklines: memory or GPU utilisation",
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
  const TableLayout layout = table_layout(width, owner_column_width(owners));
  screen.rows = top_rows(d, state.sort, state.tree, state.filter, frame.cpu);
  const std::size_t area = height > lines.size() + 2 ? height - lines.size() - 2 : 0;

  if (state.pane) {
    TopPane& pane = *state.pane;
    add({{" " + pane.title + " ", Style::kSelected}}, true);
    const std::vector<std::string> wrapped = wrap_pane_lines(pane.lines, width);
    const std::size_t shown = area;
    if (wrapped.size() > shown && pane.scroll > wrapped.size() - shown) {
      pane.scroll = wrapped.size() - shown;
    }
    if (wrapped.size() <= shown) pane.scroll = 0;
    for (std::size_t i = 0; i < shown; ++i) {
      const std::size_t at = pane.scroll + i;
      add({{at < wrapped.size() ? wrapped[at] : "", Style::kNormal}});
    }
  } else {
    add(table_header(state, layout));
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
        add(holder_line(screen.rows[at], frame, layout, is_selected), is_selected);
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
