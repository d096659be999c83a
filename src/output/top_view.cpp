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

std::string gpu_cell(const Holder& holder) {
  std::vector<unsigned> gpus;
  for (const auto& [gpu, bytes] : holder.gpu_memory) gpus.push_back(gpu);  // in order (a map)
  if (gpus.empty()) return "-";
  std::string cell;
  for (std::size_t i = 0; i < gpus.size();) {
    std::size_t end = i;  // the last of a run of consecutive indices
    while (end + 1 < gpus.size() && gpus[end + 1] == gpus[end] + 1) ++end;
    cell += cell.empty() ? "" : ",";
    if (end >= i + 2) {
      cell += fmt::format("{}-{}", gpus[i], gpus[end]);
      i = end + 1;
    } else {
      cell += std::to_string(gpus[i]);
      ++i;
    }
  }
  return cell;
}

std::string nvml_status_line(const StatusReport& report) {
  if (report.nvml_state != NvmlState::kFailed) return "";
  // The helper's timeout says so in these words (collect/gpu_sampler.cpp): a hung driver.
  const bool timed_out = report.nvml_message.rfind("NVML did not answer", 0) == 0;
  return (timed_out ? "NVML not answering: " : "NVML failed: ") +
         escape_terminal(report.nvml_message);
}

namespace {

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
  const Verdict verdict = report.verdict;
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

// "NVIDIA H200" → "H200": the vendor is the driver line's; the model is what tells GPUs apart.
std::string short_gpu_name(const Gpu& gpu) {
  constexpr std::size_t kNameRoom = 20;
  std::string name = escape_terminal(gpu.name);
  constexpr std::string_view kVendor = "NVIDIA ";
  if (gpu.source == Gpu::Source::kNvml && name.rfind(kVendor, 0) == 0 &&
      name.size() > kVendor.size()) {
    name.erase(0, kVendor.size());
  }
  return cut_to_columns(name, kNameRoom);
}

// The bar's cells as ASCII: '#' attributed, '+' unattributed, '.' free.
std::string ascii_bar(const std::string& bar) {
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
  return ascii;
}

// A piece of a GPU line. Text is shown when its priority earns it room (the highest first);
// the bar and the sparkline have a least width and take what the others leave.
struct GpuPart {
  enum class Kind { kText, kName, kBar, kSparkline };
  Kind kind = Kind::kText;
  std::string text;
  Style style = Style::kNormal;
  int priority = 0;
  [[nodiscard]] std::size_t least_columns() const {
    constexpr std::size_t kBarLeast = 8 + 2;         // [########]
    constexpr std::size_t kSparklineLeast = 2 + 10;  // two blanks and 10 cells
    switch (kind) {
      case Kind::kBar:
        return kBarLeast;
      case Kind::kSparkline:
        return kSparklineLeast;
      case Kind::kText:
      case Kind::kName:
        break;
    }
    return display_columns(text);
  }
};

// Always shown, whatever the width (with the bar at its least: the line is cut past it).
constexpr int kAlways = 100;

// The vitals `status` prints (utilisation, temperature, power), each where the driver answered.
void add_vitals(std::vector<GpuPart>& parts, const Gpu& gpu) {
  constexpr double kMilliwattsPerWatt = 1000.0;
  if (gpu.utilization) {
    parts.push_back(
        {GpuPart::Kind::kText, fmt::format("  util {}%", *gpu.utilization), Style::kNormal, 9});
  }
  if (gpu.temperature_c) {
    parts.push_back(
        {GpuPart::Kind::kText, fmt::format("  {} °C", *gpu.temperature_c), Style::kNormal, 7});
  }
  if (gpu.power_mw) {
    parts.push_back({GpuPart::Kind::kText,
                     fmt::format("  {:.0f} W", *gpu.power_mw / kMilliwattsPerWatt), Style::kNormal,
                     5});
  }
}

// A GPU line's parts, left to right. What goes first when narrow (lowest priority): "unattr 0 B",
// the attributed figure (the bar shows it), the sparkline, power, the name, the temperature,
// unattributed memory, utilisation; the label, the bar and used / total always stay.
std::vector<GpuPart> gpu_parts(const GpuReport& r, const TopFrame& frame, std::size_t name_width) {
  using Kind = GpuPart::Kind;
  const Gpu& gpu = r.gpu;
  std::vector<GpuPart> parts = {
      {Kind::kText, fmt::format("GPU {} ", gpu.index), Style::kBold, kAlways}};
  if (name_width > 0) {
    const std::string name = short_gpu_name(gpu);
    parts.push_back({Kind::kName, name + std::string(name_width - display_columns(name) + 1, ' '),
                     Style::kNormal, 6});
  }
  if (!gpu.memory && gpu.source == Gpu::Source::kDrm) {
    // i915 and xe give no used total: what the clients hold is all there is.
    parts.push_back({Kind::kText,
                     fmt::format("{} attributed; total unknown ({})", format_bytes(r.attributed),
                                 escape_terminal(gpu.driver)),
                     Style::kDim, kAlways});
  } else if (!gpu.memory) {
    parts.push_back({Kind::kText, "memory unknown", Style::kYellow, kAlways});
  } else {
    const Style split = r.unattributed > 0 ? Style::kYellow : Style::kDim;
    parts.push_back({Kind::kBar, "", r.unattributed > 0 ? Style::kYellow : Style::kGreen, kAlways});
    parts.push_back(
        {Kind::kText,
         fmt::format(" {} / {}", format_bytes(gpu.memory->used), format_bytes(gpu.memory->total)),
         Style::kNormal, kAlways});
    parts.push_back({Kind::kText, fmt::format("  attr {}", format_bytes(r.attributed)), split, 3});
    parts.push_back({Kind::kText, fmt::format("  unattr {}", format_bytes(r.unattributed)), split,
                     r.unattributed > 0 ? 8 : 1});
  }
  add_vitals(parts, gpu);
  const MemoryHistory* history = frame.show_utilization ? frame.utilization : frame.history;
  if (history != nullptr && history->of(gpu.index) != nullptr) {
    parts.push_back({Kind::kSparkline, "", Style::kDim, 4});
  }
  return parts;
}

// Which parts earn room in `width` columns, the most important first; `used`: their columns.
std::vector<bool> parts_shown(const std::vector<GpuPart>& parts, std::size_t width,
                              std::size_t& used) {
  std::vector<std::size_t> by_priority(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) by_priority[i] = i;
  std::stable_sort(by_priority.begin(), by_priority.end(), [&](std::size_t a, std::size_t b) {
    return parts[a].priority > parts[b].priority;
  });
  std::vector<bool> shown(parts.size(), false);
  used = 0;
  for (std::size_t i : by_priority) {
    const std::size_t columns = parts[i].least_columns();
    if (parts[i].priority < kAlways && used + columns > width) continue;
    shown[i] = true;
    used += columns;
  }
  return shown;
}

// Whether the GPU's name has room on its line.
bool name_shown(const GpuReport& r, const TopFrame& frame, std::size_t width,
                std::size_t name_width) {
  const std::vector<GpuPart> parts = gpu_parts(r, frame, name_width);
  std::size_t used = 0;
  const std::vector<bool> shown = parts_shown(parts, width, used);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].kind == GpuPart::Kind::kName) return shown[i];
  }
  return false;
}

// "GPU 0 H200 [████▒▒····] 76.0 GiB / 139.8 GiB  attr 70.0 GiB  unattr 6.0 GiB  util 87%
// 55 °C  640 W  ▁▂▃▅▇" where `width` has room for all of it; narrower, the least important parts
// are left out (gpu_parts), never wrapped. `name_width`: the widest name of the GPUs shown (0:
// no names), so that their bars line up.
ScreenLine gpu_line(const GpuReport& r, const TopFrame& frame, std::size_t width,
                    std::size_t name_width) {
  std::vector<GpuPart> parts = gpu_parts(r, frame, name_width);
  std::size_t used = 0;
  const std::vector<bool> shown = parts_shown(parts, width, used);
  // What is left widens the bar (a third of it, at most 30 cells) and then the sparkline.
  const std::size_t spare = width > used ? width - used : 0;
  bool sparkline_shown = false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    sparkline_shown |= shown[i] && parts[i].kind == GpuPart::Kind::kSparkline;
  }
  constexpr std::size_t kBarLeast = 8;
  constexpr std::size_t kBarMost = 30;
  constexpr std::size_t kSparklineLeast = 10;
  constexpr std::size_t kSparklineMost = 60;
  const std::size_t bar_cells =
      std::min(kBarMost, kBarLeast + (sparkline_shown ? spare / 3 : spare));
  const std::size_t spark_cells =
      std::min(kSparklineMost, kSparklineLeast + spare - (bar_cells - kBarLeast));
  ScreenLine line;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!shown[i]) continue;
    GpuPart& part = parts[i];
    if (part.kind == GpuPart::Kind::kBar) {
      const GpuMemory& m = *r.gpu.memory;
      part.text = memory_bar(m.total, r.attributed, r.unattributed, static_cast<int>(bar_cells));
      if (!frame.unicode) part.text = ascii_bar(part.text);
    } else if (part.kind == GpuPart::Kind::kSparkline) {
      const MemoryHistory* history = frame.show_utilization ? frame.utilization : frame.history;
      part.text = "  " + sparkline(*history->of(r.gpu.index), frame.now,
                                   static_cast<int>(spark_cells), frame.unicode);
    }
    line.push_back({std::move(part.text), part.style});
  }
  return line;
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

// One row's cells as text, before the layout drops some.
struct RowCells {
  std::string pid, user, klass, age, memory, gpus, gpu, cpu, rss;
};

RowCells row_cells(const Holder& h, const TopFrame& frame) {
  const ProcessInfo& p = h.process;
  const Bytes memory = total_memory(h);
  const double cpu = cpu_percent(h, frame.cpu);
  return {std::to_string(p.pid),
          escape_terminal(h.visible ? p.user : "?"),
          class_label(h),
          p.start_time ? format_age(frame.now - *p.start_time) : "?",
          memory > 0 ? format_bytes(memory) : "-",
          gpu_cell(h),
          h.activity ? fmt::format("{}", h.activity->sm) : "-",
          cpu >= 0 ? fmt::format("{:.0f}", cpu) : "-",
          h.visible && p.rss_pages > 0 ? compact_bytes(p.rss_pages * frame.page_size) : "-"};
}

// How wide each column is: its widest cell among the rows listed, its name in the header at
// least (PID: 5), some capped: USER at 10, CLASS at 13, GPU at 7 (cut with "…"). GPU% and CPU%
// are kPercentWidth.
struct ColumnWidths {
  std::size_t pid = 5, user = 4, klass = 5, age = 3, memory = 6, gpus = 3, rss = 3;
};
constexpr std::size_t kPercentWidth = 4;

ColumnWidths column_widths(const std::vector<RowCells>& rows) {
  ColumnWidths w;
  const auto widen = [](std::size_t& width, const std::string& cell, std::size_t most) {
    width = std::min(std::max(width, display_columns(cell)), most);
  };
  for (const RowCells& c : rows) {
    widen(w.pid, c.pid, 10);
    widen(w.user, c.user, 10);
    widen(w.klass, c.klass, 13);
    widen(w.age, c.age, 6);
    widen(w.memory, c.memory, 10);
    widen(w.gpus, c.gpus, 7);
    widen(w.rss, c.rss, 6);
  }
  return w;
}

// The holder table's columns for a terminal `width` wide. In full: " " PID " " USER " " CLASS
// " " AGE " " MEMORY " " GPU " " GPU% " " CPU% " " RSS "  " [OWNER "  "] COMMAND, each as wide
// as its content (ColumnWidths), and COMMAND the rest. Where COMMAND would get fewer than
// kCommandRoom columns, OWNER goes first, then RSS, CPU%, AGE, GPU%, GPU, then USER, then the
// margins narrow and CLASS is cut at 10: PID, CLASS, MEMORY and the start of COMMAND are what one
// acts on. Issue 50: with fixed widths PID took 10 columns at 80 and COMMAND 20; now COMMAND
// gets 30 or more there.
struct TableLayout {
  ColumnWidths widths;
  bool narrow = false;  // no left margin, one blank before COMMAND, CLASS cut at 10
  bool user = true;
  bool age = true;
  bool gpus = true;  // GPU: the GPUs it has memory on
  bool gpu = true;   // GPU%: the SM utilisation NVML samples for it
  bool cpu = true;   // CPU%: host CPU since the last refresh
  bool rss = true;   // resident host memory
  std::size_t owner_width = 0;

  [[nodiscard]] std::size_t class_width() const {
    return narrow ? std::min<std::size_t>(widths.klass, 10) : widths.klass;
  }
  [[nodiscard]] std::size_t prefix_width() const {
    std::size_t total =
        (narrow ? 0 : 1) + widths.pid + 1 + class_width() + 1 + widths.memory + (narrow ? 1 : 2);
    if (user) total += widths.user + 1;
    if (age) total += widths.age + 1;
    if (gpus) total += widths.gpus + 1;
    if (gpu) total += kPercentWidth + 1;
    if (cpu) total += kPercentWidth + 1;
    if (rss) total += widths.rss + 1;
    if (owner_width > 0) total += owner_width + 2;
    return total;
  }
};

constexpr std::size_t kCommandRoom = 30;

TableLayout table_layout(std::size_t width, std::size_t owner_width, const ColumnWidths& widths) {
  TableLayout layout;
  layout.widths = widths;
  layout.owner_width = owner_width;
  const auto fits = [&] { return layout.prefix_width() + kCommandRoom <= width; };
  if (!fits()) layout.owner_width = 0;
  if (!fits()) layout.rss = false;
  if (!fits()) layout.cpu = false;
  if (!fits()) layout.age = false;
  if (!fits()) layout.gpu = false;
  if (!fits()) layout.gpus = false;
  if (!fits()) layout.user = false;
  if (!fits()) layout.narrow = true;
  return layout;
}

// `text` cut to `width` columns and padded to it with blanks: after it (left-aligned) or before.
std::string pad_right(const std::string& text, std::size_t width) {
  const std::string cut = cut_to_columns(text, width);
  return cut + std::string(width - display_columns(cut), ' ');
}
std::string pad_left(const std::string& text, std::size_t width) {
  const std::string cut = cut_to_columns(text, width);
  return std::string(width - display_columns(cut), ' ') + cut;
}

// The cells before COMMAND, as three parts: before CLASS, CLASS (padded: it has its own colour),
// after it.
struct RowParts {
  std::string before;
  std::string klass;
  std::string after;
};

RowParts row_parts(const TableLayout& layout, const RowCells& cells) {
  const ColumnWidths& w = layout.widths;
  RowParts parts;
  parts.before = std::string(layout.narrow ? 0 : 1, ' ') + pad_left(cells.pid, w.pid) + " ";
  if (layout.user) parts.before += pad_right(cells.user, w.user) + " ";
  parts.klass = pad_right(cells.klass, layout.class_width());
  parts.after = " ";
  if (layout.age) parts.after += pad_left(cells.age, w.age) + " ";
  parts.after += pad_left(cells.memory, w.memory);
  if (layout.gpus) parts.after += " " + pad_right(cells.gpus, w.gpus);
  if (layout.gpu) parts.after += " " + pad_left(cells.gpu, kPercentWidth);
  if (layout.cpu) parts.after += " " + pad_left(cells.cpu, kPercentWidth);
  if (layout.rss) parts.after += " " + pad_left(cells.rss, w.rss);
  parts.after += layout.narrow ? " " : "  ";
  return parts;
}

ScreenLine table_header(const TopViewState& state, const TableLayout& layout) {
  const std::string owner =
      layout.owner_width > 0 ? fmt::format("{:<{}}  ", "OWNER", layout.owner_width) : "";
  const RowParts parts =
      row_parts(layout, {"PID", "USER", "CLASS", "AGE", "MEMORY", "GPU", "GPU%", "CPU%", "RSS"});
  std::string text = parts.before + parts.klass + parts.after + owner + "COMMAND";
  std::string how =
      // "[by memory": the sort key is what stays readable where COMMAND keeps its 30 columns.
      fmt::format("  [by {}{}{}]", to_string(state.sort), state.tree ? ", tree" : ", flat",
                  state.filter.empty() ? "" : ", filter: " + state.filter);
  return {{text, Style::kBold}, {escape_terminal(how), Style::kDim}};
}

ScreenLine holder_line(const TopRow& row, const RowCells& cells, const TableLayout& layout,
                       bool selected) {
  const Holder& h = *row.holder;
  const ProcessInfo& p = h.process;
  std::string command = h.visible ? command_label(p, 400) : "(not visible from this PID namespace)";
  // Whose memory it holds matters more than the end of its command line: first.
  if (h.mps_client) command = "(MPS client) " + command;
  if (h.inherited_from)
    command = fmt::format("(heir of dead pid {}) ", *h.inherited_from) + command;
  const std::string indent = tree_indent(row.depth) + depth_mark(row.depth);
  const std::string owner =
      layout.owner_width > 0 ? output::owner_cell(p.owner, layout.owner_width, 2) : std::string();
  const RowParts parts = row_parts(layout, cells);
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

// The footer: a prompt, a pane's keys, a message, or the keys that fit `width`, the most used
// first and "? help" always last.
std::string key_help(const TopViewState& state, bool problems, std::size_t width) {
  if (!state.prompt.empty()) return state.prompt + "_";
  if (state.pane) return state.pane->keys;
  if (!state.message.empty()) return state.message;
  std::vector<std::string> keys = {"q quit", "↑↓/jk select", "e explain", "K kill"};
  if (problems) keys.emplace_back(state.problems_open ? "p fold problems" : "p problems");
  for (const char* key : {"t tree", "s sort", "/ filter", "g GPUs"}) keys.emplace_back(key);
  const std::string help = "? help";
  std::string text;
  for (const std::string& key : keys) {
    if (display_columns(text) + display_columns(key) + 2 + help.size() > width) break;
    text += key + "  ";
  }
  return text + help;
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
      "  p               the problems: one line, or each with its fix",
      "  /               filter holders by PID, user, class or command (empty: all)",
      "  g               choose the GPUs shown (0,2 or 0-3 or all)",
      "  ?               this help",
      "  q  Esc          close a pane; q quits",
      "",
      "Columns",
      "  GPU             the GPUs NVML counts the holder's memory on (-: none)",
      "  GPU%            its SM utilisation in NVML's samples (-: unknown)",
      "  CPU%            host CPU since the last refresh, of one core",
      "",
      "Classes",
      "  active          a live process using the GPU",
      "  orphan          its parent died (a worker of a killed server)",
      "  heir            holds the memory of a dead process NVML still names",
      "  zombie-leader   its main thread exited, other threads hold the device",
      "  stuck           a thread is stuck in the driver or its memory map is locked",
      "",
      "Every process's files are re-read at least once per --full-scan period; new processes,",
      "holders and the PIDs NVML lists are re-read on every refresh.",
  };
}

namespace {

// The screen's lines as they are added, each cut to the width.
struct ScreenLines {
  std::vector<ScreenLine>& lines;
  std::size_t width;
  std::size_t height;
  void add(ScreenLine line, bool pad = false) { lines.push_back(fit(std::move(line), width, pad)); }
  [[nodiscard]] bool room() const { return lines.size() + 1 < height; }
};

// One line per GPU, within `room` lines: the last says how many more there are when they do not
// all fit.
void add_gpu_lines(ScreenLines& out, const TopFrame& frame, std::size_t room) {
  const std::vector<GpuReport>& gpus = frame.report->diagnosis.gpus;
  std::size_t name_width = 0;
  for (const GpuReport& g : gpus) {
    name_width = std::max(name_width, display_columns(short_gpu_name(g.gpu)));
  }
  // The names on every line or on none, so that the bars line up.
  for (std::size_t i = 0; i < gpus.size() && i < room; ++i) {
    if (name_width > 0 && !name_shown(gpus[i], frame, out.width, name_width)) name_width = 0;
  }
  for (std::size_t i = 0; i < gpus.size() && i < room && out.room(); ++i) {
    if (i + 1 == room && gpus.size() > room) {
      out.add({{fmt::format("(+{} more GPUs: g chooses which are shown)", gpus.size() - i),
                Style::kDim}});
      break;
    }
    out.add(gpu_line(gpus[i], frame, out.width, name_width));
  }
}

// "orphan" → "2 orphans": a kind's word with its count (JSON's words; the nouns take an s).
std::string kind_count(ProblemKind kind, std::size_t count) {
  std::string word = to_string(kind);
  const bool noun = kind == ProblemKind::kHolder || kind == ProblemKind::kOrphan ||
                    kind == ProblemKind::kHeir || kind == ProblemKind::kZombieLeader ||
                    kind == ProblemKind::kMpsLeftover || kind == ProblemKind::kStrayContext;
  if (noun && count > 1) word += 's';
  return fmt::format("{} {}", count, word);
}

// The problems in one line (issue 50: two lines each pushed the table down). One problem is
// its own message; more are counted, with the memory they count and their kinds: "! 3 problems
// (16.0 GiB): 2 orphans, 1 unattributed — p: show". The key stays whole where the rest is cut.
ScreenLine problem_summary(const Diagnosis& d, bool open, std::size_t width) {
  std::size_t errors = 0;
  Bytes bytes = 0;
  std::vector<std::pair<ProblemKind, std::size_t>> kinds;  // in the order they come
  for (const Problem& p : d.problems) {
    errors += p.severity == Severity::kError ? 1 : 0;
    bytes += p.bytes.value_or(0);
    auto it =
        std::find_if(kinds.begin(), kinds.end(), [&p](const auto& k) { return k.first == p.kind; });
    if (it == kinds.end()) {
      kinds.emplace_back(p.kind, 1);
    } else {
      ++it->second;
    }
  }
  const std::size_t warnings = d.problems.size() - errors;
  std::string text;
  if (d.problems.size() == 1) {
    text = escape_terminal(d.problems.front().message);
  } else {
    const auto count = [](std::size_t n, const char* what) {
      return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
    };
    text = errors > 0 ? count(errors, "problem") : "";
    if (warnings > 0) text += (text.empty() ? "" : ", ") + count(warnings, "warning");
    if (bytes > 0) text += " (" + format_bytes(bytes) + ")";
    std::string listed;
    for (const auto& [kind, n] : kinds)
      listed += (listed.empty() ? "" : ", ") + kind_count(kind, n);
    text += ": " + listed;
  }
  const std::string key = open ? " — p: fold" : " — p: show";
  const std::size_t room = width > display_columns(key) + 2 ? width - display_columns(key) - 2 : 0;
  return {{"! ", errors > 0 ? Style::kRed : Style::kYellow},
          {cut_to_columns(text, room), Style::kNormal},
          {key, Style::kDim}};
}

// The problems: the summary line; open (`p`), each problem and its fix below it, as many as
// `room` lines hold, with "+N more" when not all do (never one dropped unsaid).
void add_problem_lines(ScreenLines& out, const Diagnosis& d, bool open, std::size_t room) {
  if (d.problems.empty() || room == 0) return;
  out.add(problem_summary(d, open, out.width));
  if (!open) return;
  std::size_t used = 1;
  for (std::size_t i = 0; i < d.problems.size(); ++i) {
    const Problem& p = d.problems[i];
    // Two lines for it, and one for "+N more" when others follow.
    const bool more_follow = i + 1 < d.problems.size();
    if (used + 2 + (more_follow ? 1 : 0) > room) {
      if (used < room) {
        const std::size_t more = d.problems.size() - i;
        out.add({{fmt::format("(+{} more problem{}: gpuclean status lists them all)", more,
                              more == 1 ? "" : "s"),
                  Style::kDim}});
      }
      break;
    }
    out.add({{"  ! ", p.severity == Severity::kError ? Style::kRed : Style::kYellow},
             {escape_terminal(p.message), Style::kNormal}});
    out.add({{"    fix: ", Style::kDim}, {escape_terminal(p.fix), Style::kNormal}});
    used += 2;
  }
}

// A pane (help, explain, kill) where the table was: its title and `area` lines of it.
void add_pane(ScreenLines& out, TopPane& pane, std::size_t area) {
  out.add({{" " + pane.title + " ", Style::kSelected}}, true);
  const std::vector<std::string> wrapped = wrap_pane_lines(pane.lines, out.width);
  if (wrapped.size() > area && pane.scroll > wrapped.size() - area) {
    pane.scroll = wrapped.size() - area;
  }
  if (wrapped.size() <= area) pane.scroll = 0;
  for (std::size_t i = 0; i < area; ++i) {
    const std::size_t at = pane.scroll + i;
    out.add({{at < wrapped.size() ? wrapped[at] : "", Style::kNormal}});
  }
}

// The row of the selection: the same PID as before, else the first row (state.selected is set
// to it); `area` rows scrolled so that it shows.
std::size_t place_selection(const std::vector<TopRow>& rows, TopViewState& state,
                            std::size_t area) {
  std::size_t selected = 0;
  bool found = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (state.selected && rows[i].holder->process.pid == *state.selected) {
      selected = i;
      found = true;
    }
  }
  if (!found) {
    state.selected = rows.empty() ? std::nullopt : std::optional<Pid>(rows[0].holder->process.pid);
  }
  if (selected < state.scroll) state.scroll = selected;
  if (area > 0 && selected >= state.scroll + area) state.scroll = selected + 1 - area;
  if (rows.size() <= area) state.scroll = 0;
  return selected;
}

// The holders' table: its header and `area` rows, each column as wide as the rows listed need.
void add_table(ScreenLines& out, const TopFrame& frame, TopViewState& state, TopScreen& screen,
               std::size_t area) {
  const Diagnosis& d = frame.report->diagnosis;
  std::vector<const std::optional<Owner>*> owners;
  for (const Holder& h : d.holders) owners.push_back(&h.process.owner);
  std::vector<RowCells> cells;
  cells.reserve(screen.rows.size());
  for (const TopRow& row : screen.rows) cells.push_back(row_cells(*row.holder, frame));
  const TableLayout layout =
      table_layout(out.width, output::owner_column_width(owners), column_widths(cells));
  out.add(table_header(state, layout));
  screen.table_height = area;
  const std::size_t selected = place_selection(screen.rows, state, area);
  for (std::size_t i = 0; i < area; ++i) {
    const std::size_t at = state.scroll + i;
    if (at < screen.rows.size()) {
      const bool is_selected = state.selected && at == selected;
      out.add(holder_line(screen.rows[at], cells[at], layout, is_selected), is_selected);
    } else if (i == 0 && screen.rows.empty()) {
      out.add({{state.filter.empty() ? "  (no process holds a selected device)"
                                     : "  (no holder matches the filter)",
                Style::kDim}});
    } else {
      out.lines.emplace_back();
    }
  }
}

}  // namespace

TopScreen compose_top(const TopFrame& frame, const TopViewState& given, int width_in,
                      int height_in) {
  TopScreen screen;
  screen.drawn = given;
  TopViewState& state = screen.drawn;
  ScreenLines out{screen.lines, static_cast<std::size_t>(std::max(width_in, 1)),
                  static_cast<std::size_t>(std::max(height_in, 1))};
  out.add(header_line(frame));
  const bool problems = frame.report != nullptr && !frame.report->diagnosis.problems.empty();
  const std::string footer = key_help(state, problems, out.width);
  if (frame.report != nullptr) {
    const Diagnosis& d = frame.report->diagnosis;
    out.add(source_line(*frame.report));
    // What the table needs at least: its header and three rows, and the footer.
    constexpr std::size_t kTableMinimum = 4;
    const std::size_t used = out.lines.size() + kTableMinimum + 1;
    const std::size_t budget = out.height > used ? out.height - used : 0;
    // GPUs first, then problems, each within what the table leaves.
    const std::size_t gpu_room = std::min(d.gpus.size(), std::max<std::size_t>(budget / 2, 1));
    add_gpu_lines(out, frame, gpu_room);
    // Open, the problems take at most half of the screen; with 40 of them the holders' table
    // is still what one acts on (bench/top_bench.sh's crowd showed 3 rows of 40 at 200x50).
    const std::size_t problem_room = std::min(budget > gpu_room ? budget - gpu_room : 0,
                                              std::max<std::size_t>(out.height / 2, 2));
    add_problem_lines(out, d, state.problems_open, problem_room);
    screen.rows = top_rows(d, state.sort, state.tree, state.filter, frame.cpu);
    const std::size_t area =
        out.height > out.lines.size() + 2 ? out.height - out.lines.size() - 2 : 0;
    if (state.pane) {
      add_pane(out, *state.pane, area);
    } else {
      add_table(out, frame, state, screen, area);
    }
  }
  while (out.room()) out.lines.emplace_back();
  out.lines.resize(out.height - 1);
  out.add({{footer, state.prompt.empty() && state.message.empty() ? Style::kDim : Style::kBold}});
  return screen;
}

}  // namespace gpuclean::output
