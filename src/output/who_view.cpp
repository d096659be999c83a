#include "output/who_view.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/diagnostics.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/owner_text.h"
#include "output/text_width.h"

namespace gpuclean::output {
namespace {

std::string access_label(const HeldFile& file) {
  std::string access;
  access += file.readable ? 'r' : '-';
  access += file.writable ? 'w' : '-';
  access += file.mapped ? 'm' : '-';
  return access;
}

std::string file_heading(const DeviceFile& file) {
  std::string heading = escape_terminal(file.path);
  if (file.nvidia_minor) heading += fmt::format(" (GPU minor {})", *file.nvidia_minor);
  return heading;
}

const HeldFile* find_held(const Holder& holder, const std::string& path) {
  for (const HeldFile& held : holder.devices) {
    if (held.path == path) return &held;
  }
  return nullptr;
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace

std::string state_label(const ProcessInfo& process) {
  std::string label(1, process.state);
  if (process.threads.size() > 1) label += 'l';
  return label;
}

std::string full_command_label(const ProcessInfo& process, std::size_t max_bytes) {
  return display_command_or_name(process.cmdline, process.comm, max_bytes);
}

std::string command_label(const ProcessInfo& process, std::size_t max_bytes) {
  if (process.cmdline.empty()) return full_command_label(process, max_bytes);
  std::vector<std::string> argv = process.cmdline;
  const std::size_t slash = argv.front().rfind('/');
  if (slash != std::string::npos && slash + 1 < argv.front().size()) {
    argv.front().erase(0, slash + 1);
  }
  return display_command(argv, max_bytes);
}

void render_who_text(std::ostream& out, const WhoReport& report) {
  std::size_t user_width = 4;
  std::size_t class_width = 5;
  std::vector<const std::optional<Owner>*> owners;
  for (const Holder& holder : report.holders) {
    user_width = std::max(user_width, escape_terminal(holder.process.user).size());
    class_width = std::max(class_width, std::string(to_string(holder.klass)).size());
    owners.push_back(&holder.process.owner);
  }
  const std::size_t owner_width = owner_column_width(owners);
  std::size_t held_files = 0;
  for (const DeviceFile& file : report.files) {
    bool heading_printed = false;
    for (const Holder& holder : report.holders) {
      const HeldFile* held = find_held(holder, file.path);
      if (held == nullptr) continue;
      if (!heading_printed) {
        out << file_heading(file) << ":\n";
        out << fmt::format("  {:<{}} {:>8} {:<5} {:<6} {:<{}} {}{}\n", "USER", user_width, "PID",
                           "STATE", "ACCESS", "CLASS", class_width,
                           owner_width > 0 ? fmt::format("{:<{}} ", "OWNER", owner_width) : "",
                           "COMMAND");
        heading_printed = true;
        ++held_files;
      }
      std::string command = command_label(holder.process);
      if (held->via_thread) command += fmt::format("  (held through thread {})", *held->via_thread);
      if (held->deleted) command += "  (file deleted)";
      if (held->opened_as) command += "  (opened as " + escape_terminal(*held->opened_as) + ")";
      out << fmt::format("  {:<{}} {:>8} {:<5} {:<6} {:<{}} {}{}\n",
                         escape_terminal(holder.process.user), user_width, holder.process.pid,
                         state_label(holder.process), access_label(*held), to_string(holder.klass),
                         class_width, owner_cell(holder.process.owner, owner_width, 1), command);
    }
  }
  if (report.holders.empty() && report.unseen_decides) {
    out << fmt::format(
        "No process seen holding the {} selected ({} processes scanned), but not "
        "every process could be read: see below.\n",
        plural(report.files.size(), "file", "files"), report.stats.processes);
  } else if (report.holders.empty()) {
    out << fmt::format("No process holds the {} selected ({} processes scanned).\n",
                       plural(report.files.size(), "file", "files"), report.stats.processes);
  } else {
    out << fmt::format("{} {} of the {} selected ({} processes scanned in {:.2f} s).\n",
                       plural(report.holders.size(), "process holds", "processes hold"),
                       plural(held_files, "file", "files"), report.files.size(),
                       report.stats.processes, report.stats.seconds);
  }
}

void render_who_json(std::ostream& out, const WhoReport& report) {
  nlohmann::json doc = document_header(report.host, report.time);
  doc["verdict"] = who_verdict(report);
  doc["files"] = to_json_array(report.files);
  doc["holders"] = to_json_array(report.holders);
  if (report.named_pids) doc["pids"] = *report.named_pids;
  doc["scan"] = to_json(report.stats);
  write_json(out, doc);
}

const char* who_verdict(const WhoReport& report) {
  if (!report.holders.empty()) return "dirty";
  return report.unseen_decides ? "unknown" : "clean";
}

std::string unreadable_summary(const ScanStats& stats, const std::string& unseen_message) {
  std::string locked;
  if (!stats.locked_pids.empty()) {
    // Only maps that did not answer land here (a locked holder is a `stuck` finding anyway):
    // one line, however many.
    std::string pids;
    for (Pid pid : stats.locked_pids) pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
    locked =
        said(fmt::format("{} did not answer in time (memory map locked: a thread is stuck; see its "
                         "wait channels): {} {}; scanned through descriptors only",
                         plural(stats.locked_pids.size(), "process", "processes"),
                         stats.locked_pids.size() == 1 ? "pid" : "pids", pids));
  }
  if (unseen_message.empty()) return locked;
  return (locked.empty() ? "" : locked + "\n") + said(unseen_message);
}

}  // namespace gpuclean::output
