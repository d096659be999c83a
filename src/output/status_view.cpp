#include "output/status_view.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/diagnostics.h"
#include "core/units.h"
#include "core/wall_time.h"
#include "output/escape.h"
#include "output/history_view.h"
#include "output/json.h"
#include "output/owner_text.h"
#include "output/text_width.h"
#include "output/tree_text.h"
#include "output/who_view.h"

namespace gpuclean::output {
namespace {

struct Paint {
  bool on;
  [[nodiscard]] std::string operator()(const std::string& text, const char* code) const {
    return on ? fmt::format("\x1b[{}m{}\x1b[0m", code, text) : text;
  }
};
constexpr const char* kRed = "31";
constexpr const char* kGreen = "32";
constexpr const char* kYellow = "33";
constexpr const char* kDim = "2";
constexpr const char* kBold = "1";

const char* class_colour(HolderClass klass) {
  switch (klass) {
    case HolderClass::kActive:
      return kGreen;
    case HolderClass::kMonitor:
    case HolderClass::kZombie:
      return kDim;
    default:
      return kRed;
  }
}

// Columns before COMMAND in a holder row at depth 0: "  " PID(8) "  " USER(10) " " CLASS(13)
// " " AGE(6) " " MEMORY(9) "  ", and OWNER "  " when the table has that column.
constexpr std::size_t kRowPrefix = 2 + 8 + 2 + 10 + 1 + 13 + 1 + 6 + 1 + 9 + 2;
// How the holder tables of one screen are drawn.
struct Table {
  const Paint& paint;
  int width = 100;              // terminal columns
  std::size_t owner_width = 0;  // the OWNER column's width; 0: no such column
};

// Known owners earn the column (output/owner_text.h).
std::size_t owner_column_width(const std::vector<Holder>& holders) {
  std::vector<const std::optional<Owner>*> owners;
  owners.reserve(holders.size());
  for (const Holder& h : holders) owners.push_back(&h.process.owner);
  return output::owner_column_width(owners);
}

std::string holder_owner_cell(const Holder& h, const Table& table) {
  return output::owner_cell(h.process.owner, table.owner_width, 2);
}

// A command is never cut shorter than this, however narrow the terminal.
constexpr std::size_t kMinCommand = 16;
// A holder's note (inherited from, MPS client of) on a line of its own starts here: under the
// PID's last digits, so that it has most of the line.
constexpr std::size_t kNoteIndent = 12;

// The COMMAND cell and, when it does not fit beside it, its note on lines of their own,
// indented under the PID: a row is at most `width` columns. A child's command is indented
// inside the cell (`top`'s way): the columns before it stay where the header puts them.
std::string command_cell(const std::string& label, const std::string& note, int depth,
                         const Table& table) {
  const auto columns = static_cast<std::size_t>(std::max(table.width, 0));
  const std::size_t indent = kRowPrefix + (table.owner_width > 0 ? table.owner_width + 2 : 0);
  const std::string command = tree_indent(depth) + label;
  const std::size_t room =
      std::max(kMinCommand + tree_indent(depth).size(), columns > indent ? columns - indent : 0);
  if (note.empty()) return cut_to_columns(command, room) + '\n';
  if (display_columns(command) + 2 + display_columns(note) <= room) {
    return (command.empty() ? note : command + "  " + note) + '\n';
  }
  // The note is never cut (it says where the memory came from): wrapped on lines of its own.
  const std::size_t note_indent = kNoteIndent + tree_indent(depth).size();
  const std::size_t note_room =
      std::max(kMinCommand, columns > note_indent ? columns - note_indent : 0);
  std::string cell = cut_to_columns(command, room) + '\n';
  for (const std::string& line : wrap_words(note, note_room)) {
    cell += std::string(note_indent, ' ') + line + '\n';
  }
  return cell;
}

std::string holder_row(const Holder& h, std::optional<unsigned> gpu, double now, int depth,
                       const Table& table) {
  const ProcessInfo& p = h.process;
  std::string memory = "-";
  if (gpu) {
    if (auto it = h.gpu_memory.find(*gpu); it != h.gpu_memory.end())
      memory = format_bytes(it->second);
  } else if (!h.gpu_memory.empty()) {
    Bytes total = 0;  // a row outside the GPU tables (node services): all GPUs together
    for (const auto& entry : h.gpu_memory) total += entry.second;
    memory = format_bytes(total);
  }
  const std::string age = p.start_time ? format_age(now - *p.start_time) : "?";
  const std::string command =
      depth_mark(depth) +
      (h.visible ? command_label(p, 400) : "(not visible from this PID namespace)");
  std::string note;
  if (h.inherited_from) {
    note = fmt::format("(inherited from dead pid {}{})", *h.inherited_from,
                       h.heir ? fmt::format("; evidence: {}", to_string(h.heir->kind)) : "");
  }
  if (h.mps_client) {
    note += (note.empty() ? "" : "  ") +
            (h.mps_server ? fmt::format("(MPS client of server pid {})", *h.mps_server)
                          : std::string("(MPS client)"));
  }
  const std::string klass = fmt::format("{:<13}", class_label(h));
  return fmt::format("  {:>8}  {:<10} {} {:>6} {:>9}  {}{}", p.pid,
                     cut_to_columns(escape_terminal(h.visible ? p.user : "?"), 10),
                     table.paint(klass, class_colour(h.klass)), age, memory,
                     holder_owner_cell(h, table), command_cell(command, note, depth, table));
}

// A dead owner whose heir cannot be named: its memory stays its own, shown with the
// candidates (each has its own row elsewhere, in its own class).
std::string dead_owner_row(const DeadOwner& owner, unsigned gpu, const Table& table) {
  std::string candidates;
  for (const DeadOwner::Candidate& c : owner.candidates) {
    candidates += (candidates.empty() ? "" : ", ") + std::to_string(c.pid);
  }
  const std::string no_owner =
      table.owner_width > 0 ? fmt::format("{:<{}}  ", "-", table.owner_width) : "";
  return fmt::format(
      "  {:>8}  {:<10} {} {:>6} {:>9}  {}{}", owner.pid, "?",
      table.paint(fmt::format("{:<13}", "dead owner"), kRed), "-",
      format_bytes(owner.gpu_memory.at(gpu)), no_owner,
      command_cell("(gone)", "(heir ambiguous, candidates: " + candidates + ")", 0, table));
}

// Rows for a group of holders as a process tree: children under their parents
// (output/tree_text.h).
void render_tree(std::ostream& out, const std::vector<const Holder*>& group,
                 std::optional<unsigned> gpu, double now, const Table& table) {
  for (const auto& [h, depth] : tree_order(group)) out << holder_row(*h, gpu, now, depth, table);
}

// The header row of every holder table; the columns are holder_row's.
std::string table_header(const Table& table) {
  const std::string owner =
      table.owner_width > 0 ? fmt::format("{:<{}}  ", "OWNER", table.owner_width) : "";
  return table.paint(fmt::format("  {:>8}  {:<10} {:<13} {:>6} {:>9}  {}{}", "PID", "USER", "CLASS",
                                 "AGE", "MEMORY", owner, "COMMAND"),
                     kDim) +
         '\n';
}

std::string cuda_version(std::optional<int> version) {
  if (!version) return "";
  return fmt::format(", CUDA {}.{}", *version / 1000, (*version % 1000) / 10);
}

}  // namespace

std::string class_label(const Holder& h) {
  // A node service shows what it is where others show their class, and the class too when it
  // is not at work ("mps-server/stuck").
  std::string label = to_string(h.klass);
  if (h.service) {
    const bool working = h.klass == HolderClass::kActive || h.klass == HolderClass::kMonitor;
    label = working ? std::string(to_string(*h.service))
                    : std::string(to_string(*h.service)) + "/" + label;
  }
  return label;
}

std::string memory_bar(Bytes total, Bytes attributed, Bytes unattributed, int width) {
  if (total == 0 || width <= 0) return "[]";
  auto cells = [&](Bytes b) {
    return static_cast<int>(
        std::lround(static_cast<double>(b) / static_cast<double>(total) * width));
  };
  int a = std::min(width, cells(attributed));
  // Any non-zero amount shows at least one cell: 9 MiB of 140 GiB still deserves a mark.
  if (attributed > 0 && a == 0) a = 1;
  int u = std::min(width - a, cells(unattributed));
  if (unattributed > 0 && u == 0 && a < width) u = 1;
  std::string bar = "[";
  for (int i = 0; i < a; ++i) bar += "█";
  for (int i = 0; i < u; ++i) bar += "▒";
  for (int i = a + u; i < width; ++i) bar += "·";
  return bar + "]";
}

namespace {

// `text` wrapped to `width`, continuation lines indented by `indent`.
std::string wrapped(const std::string& text, std::size_t width, std::size_t indent) {
  std::string lines;
  for (const std::string& line : wrap_words(text, width - indent)) {
    lines += (lines.empty() ? "" : "\n" + std::string(indent, ' ')) + line;
  }
  return lines;
}

// "gpuclean · host · time · driver …": the parts that do not fit go on a second line. Then what
// NVML's state means for the figures below.
void render_heading(std::ostream& out, const StatusReport& report, const Paint& paint,
                    std::size_t width) {
  std::vector<std::string> parts = {"gpuclean", cut_to_columns(escape_terminal(report.host), 40),
                                    rfc3339(report.time)};
  if (report.nvml_state == NvmlState::kPresent) {
    parts.push_back(fmt::format("driver {}{}", escape_terminal(report.driver_version),
                                cuda_version(report.cuda_driver_version)));
  }
  std::string heading = parts.front();
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (display_columns(heading) + 3 + display_columns(parts[i]) > width) {
      out << paint(heading, kBold) << '\n';
      heading = parts[i];
    } else {
      heading += " · " + parts[i];
    }
  }
  out << paint(heading, kBold) << '\n';
  constexpr const char* kUnknownMemory =
      "  memory per GPU is unknown; device-file holders below come from /proc alone";
  const bool drm_gpus =
      std::any_of(report.diagnosis.gpus.begin(), report.diagnosis.gpus.end(),
                  [](const GpuReport& g) { return g.gpu.source == Gpu::Source::kDrm; });
  if (drm_gpus && report.nvml_state != NvmlState::kPresent) {
    // An AMD or Intel machine: no NVML is its normal state, not a warning.
    if (report.nvml_state == NvmlState::kFailed) {
      out << paint(wrapped("NVML failed: " + escape_terminal(report.nvml_message) +
                               "; NVIDIA GPUs' memory is unknown",
                           width, 2),
                   kRed)
          << '\n';
    }
  } else if (report.nvml_state == NvmlState::kAbsent) {
    out << paint(wrapped("NVML not available: " + escape_terminal(report.nvml_message), width, 2),
                 kYellow)
        << '\n'
        << wrapped(kUnknownMemory, width, 2) << '\n';
  } else if (report.nvml_state == NvmlState::kFailed) {
    out << paint(wrapped("NVML failed: " + escape_terminal(report.nvml_message), width, 2), kRed)
        << '\n'
        << wrapped(kUnknownMemory, width, 2) << '\n';
  } else if (report.nvml_state == NvmlState::kDisabled) {
    out << "NVML not used (--no-nvml): memory per GPU is unknown\n";
  }
  if (report.files.empty()) {
    out << "No device files match (no /dev/nvidia*, /dev/dri or /dev/kfd on this machine)\n";
  }
  out << '\n';
}

// "GPU 0  NAME  [bar]  used / total used  (… attributed, … unattributed)": the bar takes what
// the rest leaves (10 to 40 cells); the split goes on its own line when the whole does not fit.
void render_gpu_line(std::ostream& out, const GpuReport& g, std::size_t width) {
  if (!g.gpu.memory && g.gpu.source == Gpu::Source::kDrm) {
    // i915 and xe expose no used total: the clients' figures are all there is.
    out << fmt::format("GPU {}  {}  {} attributed; total unknown ({} gives none)\n", g.gpu.index,
                       cut_to_columns(escape_terminal(g.gpu.name), 32), format_bytes(g.attributed),
                       escape_terminal(g.gpu.driver));
    return;
  }
  const GpuMemory memory = g.gpu.memory.value_or(GpuMemory{});
  const std::string name = cut_to_columns(escape_terminal(g.gpu.name), 32);
  const std::string head = fmt::format("GPU {}  {}  ", g.gpu.index, name);
  const std::string used =
      fmt::format("  {} / {} used", format_bytes(memory.used), format_bytes(memory.total));
  const std::string split = fmt::format("({} attributed, {} unattributed)",
                                        format_bytes(g.attributed), format_bytes(g.unattributed));
  const std::size_t fixed = display_columns(head) + display_columns(used) + 2;
  const bool one_line = fixed + 10 + 2 + display_columns(split) <= width;
  const std::size_t rest = one_line ? fixed + 2 + display_columns(split) : fixed;
  const int bar_width =
      static_cast<int>(std::clamp<std::size_t>(width > rest ? width - rest : 0, 10, 40));
  out << head << memory_bar(memory.total, g.attributed, g.unattributed, bar_width) << used;
  if (one_line) {
    out << "  " << split << '\n';
  } else {
    out << '\n' << std::string(7, ' ') << split << '\n';
  }
}

// "utilisation 87% · 55 °C · 640 W", each part where the driver answered; empty when none did.
std::string sensor_text(const Gpu& gpu) {
  std::vector<std::string> parts;
  if (gpu.source == Gpu::Source::kDrm) {
    // Where its figures come from: the kernel driver, at this PCI address.
    parts.push_back(escape_terminal(gpu.driver) + " " + escape_terminal(gpu.pci_bus_id));
  }
  if (gpu.utilization) parts.push_back(fmt::format("utilisation {}%", *gpu.utilization));
  if (gpu.temperature_c) parts.push_back(fmt::format("{} °C", *gpu.temperature_c));
  constexpr double kMilliwattsPerWatt = 1000.0;
  if (gpu.power_mw) parts.push_back(fmt::format("{:.0f} W", *gpu.power_mw / kMilliwattsPerWatt));
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : " · ") + part;
  return text;
}

// One GPU: its line, then its holders as trees (the node's services are shown below, with
// theirs) and the dead owners whose memory on it no heir claims.
void render_gpu(std::ostream& out, const GpuReport& g, const StatusReport& report,
                const Table& table, std::size_t width) {
  const Diagnosis& d = report.diagnosis;
  render_gpu_line(out, g, width);
  if (const std::string sensors = sensor_text(g.gpu); !sensors.empty()) {
    out << table.paint(std::string(7, ' ') + sensors, kDim) << '\n';
  }
  std::vector<const Holder*> group;
  bool service_memory = false;
  for (const Holder& h : d.holders) {
    if (h.gpu_memory.count(g.gpu.index) == 0) continue;
    if (h.service) {
      service_memory = true;  // shown with the node's services, below
    } else {
      group.push_back(&h);
    }
  }
  std::vector<const DeadOwner*> unclaimed;  // ambiguous dead owners on this GPU
  for (const DeadOwner& owner : d.dead_owners) {
    if (owner.ambiguous && owner.gpu_memory.count(g.gpu.index) > 0) unclaimed.push_back(&owner);
  }
  if (group.empty() && unclaimed.empty()) {
    out << table.paint(
               service_memory ? "  no processes but the node's services (below)" : "  no processes",
               kDim)
        << '\n';
    return;
  }
  out << table_header(table);
  render_tree(out, group, g.gpu.index, report.time, table);
  for (const DeadOwner* owner : unclaimed) out << dead_owner_row(*owner, g.gpu.index, table);
}

// Holders with no GPU memory, then the node's own GPU software (expected holders, never
// problems while they work).
void render_other_holders(std::ostream& out, const StatusReport& report, const Table& table) {
  const Diagnosis& d = report.diagnosis;
  std::vector<const Holder*> others;
  std::vector<const Holder*> services;
  for (const Holder& h : d.holders) {
    if (h.service) {
      services.push_back(&h);
    } else if (h.gpu_memory.empty()) {
      others.push_back(&h);
    }
  }
  if (!others.empty()) {
    out << (d.gpus.empty() ? "Device-file holders\n" : "Holding device files, no GPU memory\n");
    out << table_header(table);
    render_tree(out, others, std::nullopt, report.time, table);
  }
  if (!services.empty()) {
    out << "Node services (memory: all GPUs)\n";
    out << table_header(table);
    render_tree(out, services, std::nullopt, report.time, table);
  }
}

// The problems with their fixes. Warnings ("!") leave the GPUs clean: under their own heading
// when nothing else is wrong.
void render_problems(std::ostream& out, const StatusReport& report, std::size_t errors,
                     const Paint& paint, std::size_t width) {
  const Diagnosis& d = report.diagnosis;
  if (d.problems.empty()) return;
  out << '\n' << paint(errors > 0 ? "Problems" : "Warnings", kBold) << '\n';
  for (const Problem& p : d.problems) {
    const bool warning = p.severity == Severity::kWarning;
    out << "  " << paint(warning ? "!" : "✗", warning ? kYellow : kRed) << ' '
        << wrapped(escape_terminal(p.message), width, 4) << '\n';
    out << "    fix: " << wrapped(escape_terminal(p.fix), width, 9) << '\n';
    const auto parent =
        p.pid ? report.recorded_parents.find(*p.pid) : report.recorded_parents.end();
    if (parent != report.recorded_parents.end()) {
      // argv_text escapes; the rest is ours.
      std::string text = fmt::format("orphan of pid {} {}", parent->second.pid,
                                     argv_text(parent->second.argv, 80));
      if (parent->second.gone_by) {
        text += fmt::format(" (gone by {})", format_local_clock(*parent->second.gone_by));
      }
      out << "    was: " << wrapped(text + ", from gpuclean history", width, 9) << '\n';
    }
  }
  if (!d.leftovers_fix.empty()) {
    out << "  all leftovers: " << wrapped(d.leftovers_fix, width, 4) << '\n';
  }
}

// The last line: CLEAN, DIRTY or UNKNOWN, and why.
void render_verdict(std::ostream& out, const StatusReport& report, std::size_t warnings,
                    std::size_t errors, const Paint& paint) {
  const Diagnosis& d = report.diagnosis;
  const std::string warning_count = fmt::format("{} warning{}", warnings, warnings == 1 ? "" : "s");
  out << '\n';
  if (report.verdict == Verdict::kUnknown && report.nvml_state != NvmlState::kFailed) {
    // Nothing seen is wrong, but what could not be read may hold the device.
    out << paint("UNKNOWN", kYellow) << ": " << report.unseen_message << '\n';
  } else if (report.verdict == Verdict::kUnknown) {
    // Without NVML's answer no GPU can be called clean: the memory nobody is seen holding
    // may be held all the same.
    out << paint("UNKNOWN", kYellow) << ": NVML failed, so GPU memory is not known";
    if (!d.problems.empty()) {
      out << fmt::format(" ({} problem{} seen from /proc alone)", d.problems.size(),
                         d.problems.size() == 1 ? "" : "s");
    }
    out << '\n';
  } else if (d.clean && warnings > 0) {
    out << paint("CLEAN", kGreen) << ", with " << warning_count
        << " above: none fails a check (--strict makes warnings problems)\n";
  } else if (d.clean) {
    out << paint("CLEAN", kGreen)
        << (d.gpus.empty()
                // From /proc alone: a descriptor parked in a unix socket (SCM_RIGHTS in flight)
                // or registered with io_uring is in no process's table (docs/security.md).
                ? ": no process holds the device files (a descriptor parked in a unix "
                  "socket is not seen)\n"
                : ": no process holds GPU memory; every GPU is at its baseline\n");
  } else {
    out << paint("DIRTY", kRed) << fmt::format(": {} problem{}", errors, errors == 1 ? "" : "s")
        << (warnings > 0 ? ", " + warning_count : "") << '\n';
  }
}

// Where NVML gives no per-process activity, one line for all such GPUs (busy and idle leftovers
// cannot be told apart there; --leftovers takes them as before).
void render_activity_unknown(std::ostream& out, const Diagnosis& d, const Table& table,
                             std::size_t width) {
  std::string gpus;
  std::string why;
  for (const GpuReport& g : d.gpus) {
    if (g.gpu.activity || g.gpu.activity_unavailable.empty()) continue;
    gpus += (gpus.empty() ? "" : ", ") + std::to_string(g.gpu.index);
    why = g.gpu.activity_unavailable;
  }
  if (gpus.empty()) return;
  out << table.paint(
             wrapped("Busy or idle unknown on GPU " + gpus + ": " + escape_terminal(why), width, 2),
             kDim)
      << '\n';
}

}  // namespace

void render_status_text(std::ostream& out, const StatusReport& report, const TextStyle& style) {
  const Paint paint{style.color};
  const Diagnosis& d = report.diagnosis;
  const Table table{paint, style.width, owner_column_width(d.holders)};
  const auto width = static_cast<std::size_t>(std::max(style.width, 20));
  render_heading(out, report, paint, width);
  for (const GpuReport& g : d.gpus) render_gpu(out, g, report, table, width);
  render_activity_unknown(out, d, table, width);
  render_other_holders(out, report, table);
  const auto warnings = static_cast<std::size_t>(
      std::count_if(d.problems.begin(), d.problems.end(),
                    [](const Problem& p) { return p.severity == Severity::kWarning; }));
  const std::size_t errors = d.problems.size() - warnings;
  render_problems(out, report, errors, paint, width);
  render_verdict(out, report, warnings, errors, paint);
}

void render_status_json(std::ostream& out, const StatusReport& report) {
  const auto& d = report.diagnosis;
  nlohmann::json doc = document_header(report.host, report.time);
  doc["verdict"] = to_string(report.verdict);
  doc["nvml"] = {{"state", to_string(report.nvml_state)},
                 {"message", report.nvml_message},
                 {"driver_version", text_or_null(report.driver_version)}};
  doc["nvml"]["cuda_driver_version"] = or_null(report.cuda_driver_version);
  doc["gpus"] = to_json_array(d.gpus);
  doc["holders"] = to_json_array(d.holders);
  doc["dead_owners"] = to_json_array(d.dead_owners);
  doc["problems"] = to_json_array(d.problems);
  doc["leftovers_fix"] = text_or_null(d.leftovers_fix);
  doc["files"] = to_json_array(report.files);
  doc["scan"] = to_json(report.stats);
  doc["recorded_parents"] = nlohmann::json::array();
  for (const auto& [pid, parent] : report.recorded_parents) {
    doc["recorded_parents"].push_back({{"pid", pid},
                                       {"parent_pid", parent.pid},
                                       {"argv", parent.argv},
                                       {"gone_by", or_null(parent.gone_by)}});
  }
  write_json(out, doc);
}

void render_check_lines(std::ostream& out, const StatusReport& report) {
  for (const Problem& p : report.diagnosis.problems) {
    if (p.severity == Severity::kError) say(out) << escape_terminal(p.message) << '\n';
  }
}

void render_check_warnings(std::ostream& out, const StatusReport& report) {
  for (const Problem& p : report.diagnosis.problems) {
    if (p.severity == Severity::kWarning) {
      say(out, "warning") << escape_terminal(p.message) << '\n';
    }
  }
}

}  // namespace gpuclean::output
