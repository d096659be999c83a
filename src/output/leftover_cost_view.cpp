#include "output/leftover_cost_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <string>

#include "core/escape.h"
#include "core/units.h"
#include "core/wall_time.h"
#include "output/history_view.h"
#include "output/json.h"

namespace gpuclean::output {

namespace {

using nlohmann::json;

// "12.34"; "<0.01" for a little that two decimals would show as nothing.
std::string gib_hours_text(double byte_seconds) {
  const double value = gib_hours(byte_seconds);
  return value > 0 && value < 0.005 ? std::string("<0.01") : fmt::format("{:.2f}", value);
}

// "orphan 8.00, unattributed 2.00": the classes that held anything, most first.
std::string classes_text(const std::map<std::string, double>& classes) {
  std::vector<std::pair<std::string, double>> held(classes.begin(), classes.end());
  std::erase_if(held, [](const auto& entry) { return entry.second <= 0; });
  std::stable_sort(held.begin(), held.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (const auto& [klass, byte_seconds] : held) {
    text += (text.empty() ? "" : ", ") + klass + " " + gib_hours_text(byte_seconds);
  }
  return text;
}

// The group's key as a table cell of at most `width` characters once escaped.
std::string group_key_text(const LeftoverCostGroup& group, CostGrouping by, std::size_t width) {
  const bool owner = by == CostGrouping::kOwner && group.key.find(':') != std::string::npos;
  return escape_terminal(
      cut_for_display(owner ? recorded_owner_text(group.key) : group.key, width));
}

// "killed by root (gpuclean kill) at 10:05:12", "exited at …", "still there".
std::string end_text(const LeftoverEnd& end) {
  const std::string at = end.time ? " at " + format_local_time(*end.time) : "";
  switch (end.how) {
    case LeftoverEnd::How::kKilled:
      return fmt::format("killed by {} (gpuclean {}){}", escape_terminal(end.by_user),
                         escape_terminal(end.by_command), at);
    case LeftoverEnd::How::kExited:
      return "exited" + at;
    case LeftoverEnd::How::kReclassed:
      return "no longer a leftover (now " + escape_terminal(end.detail) + ")" + at;
    case LeftoverEnd::How::kStillThere:
      break;
  }
  return "still there";
}

void render_groups(std::ostream& out, const LeftoverCostReport& report) {
  out << fmt::format("\n{:<32} {:>10} {:>10}  {}\n", std::string("By ") + to_string(report.by),
                     "GiB-hours", "leftovers", "of which");
  for (const LeftoverCostGroup& group : report.groups) {
    out << fmt::format("  {:<30} {:>10} {:>10}  {}\n", group_key_text(group, report.by, 30),
                       gib_hours_text(group.byte_seconds),
                       group.leftovers == 0 ? "-" : std::to_string(group.leftovers),
                       classes_text(group.class_byte_seconds));
  }
}

void render_leftovers(std::ostream& out, const LeftoverCostReport& report) {
  const std::size_t shown = std::min(report.leftovers.size(), kReportLeftoverLines);
  out << fmt::format("\nLongest-lived leftovers ({} of {}):\n", shown, report.leftovers.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const LeftoverEpisode& e = report.leftovers[i];
    const RecordedProcess& p = e.process;
    std::string who = escape_terminal(p.user.empty() ? "?" : p.user);
    if (!p.owner.empty()) who += ", " + escape_terminal(recorded_owner_text(p.owner));
    out << fmt::format("  pid {} {} ({})\n", p.pid, argv_text(p.argv, 60), who);
    std::string what =
        fmt::format("    {} from {} for {}: {}; {} GiB-hours, peak {}", e.klass,
                    format_local_time(e.since), format_age(e.seconds(report.until)),
                    end_text(e.end), gib_hours_text(e.byte_seconds), format_bytes(e.peak_bytes));
    if (e.known_byte_seconds > 0) {
      what += fmt::format(", idle for {} of them", gib_hours_text(e.idle_byte_seconds));
    }
    if (e.memory_back_seconds) {
      what += fmt::format(", memory back {:.1f} s after", *e.memory_back_seconds);
    }
    if (!e.members.empty()) {
      what += fmt::format(", with {} more process{} of its job", e.members.size(),
                          e.members.size() == 1 ? "" : "es");
    }
    out << what << '\n';
  }
  for (const UnattributedCost& cost : report.unattributed) {
    out << fmt::format("  GPU {}: memory no process accounts for, up to {}, for {}: {} GiB-hours\n",
                       cost.gpu, format_bytes(cost.peak_bytes), format_age(cost.seconds),
                       gib_hours_text(cost.byte_seconds));
  }
}

}  // namespace

const char* to_string(LeftoverEnd::How how) {
  switch (how) {
    case LeftoverEnd::How::kKilled:
      return "killed";
    case LeftoverEnd::How::kExited:
      return "exited";
    case LeftoverEnd::How::kReclassed:
      return "reclassed";
    case LeftoverEnd::How::kStillThere:
      break;
  }
  return "still-there";
}

void render_leftover_cost_text(std::ostream& out, const LeftoverCostReport& report) {
  const std::string window =
      fmt::format("from {} to {} ({})", format_local_time(report.since),
                  format_local_time(report.until), format_age(report.until - report.since));
  if (report.byte_seconds <= 0 && report.leftovers.empty()) {
    out << "No leftovers held GPU memory " << window << ".\n";
  } else {
    out << fmt::format("Leftovers held {} GiB-hours of GPU memory {}\n",
                       gib_hours_text(report.byte_seconds), window);
    out << "  by class: " << classes_text(report.class_byte_seconds) << '\n';
    if (report.known_byte_seconds > 0) {
      out << fmt::format("  idle: {} of the {} GiB-hours whose activity was recorded\n",
                         gib_hours_text(report.idle_byte_seconds),
                         gib_hours_text(report.known_byte_seconds));
    }
  }
  if (report.recording_began) {
    out << "  the history begins at " << format_local_time(*report.recording_began)
        << ": nothing before it is known\n";
  }
  if (!report.members_counted) {
    out << "  dead jobs' workers are not counted: this database has no index of parents yet "
           "(the recorder adds it when it next starts)\n";
  }
  if (report.unwatched_seconds >= 1) {
    out << "  the recorder was stopped for " << format_age(report.unwatched_seconds)
        << " of it: not counted\n";
  }
  if (report.groups.empty()) return;
  render_groups(out, report);
  render_leftovers(out, report);
}

json leftover_cost_json(const LeftoverCostReport& report) {
  json doc = {{"schema", 1},
              {"since", report.since},
              {"until", report.until},
              {"by", to_string(report.by)},
              {"gib_hours", gib_hours(report.byte_seconds)},
              {"byte_seconds", report.byte_seconds},
              {"idle_byte_seconds", report.idle_byte_seconds},
              {"known_byte_seconds", report.known_byte_seconds},
              {"classes", report.class_byte_seconds},
              {"unwatched_seconds", report.unwatched_seconds},
              {"recording_began", or_null(report.recording_began)},
              {"members_counted", report.members_counted},
              {"groups", json::array()},
              {"leftovers", json::array()},
              {"unattributed", json::array()}};
  for (const LeftoverCostGroup& g : report.groups) {
    doc["groups"].push_back({{"key", g.key},
                             {"gib_hours", gib_hours(g.byte_seconds)},
                             {"byte_seconds", g.byte_seconds},
                             {"idle_byte_seconds", g.idle_byte_seconds},
                             {"leftovers", g.leftovers},
                             {"classes", g.class_byte_seconds}});
  }
  for (const LeftoverEpisode& e : report.leftovers) {
    json gpus = json::object();
    for (const auto& [gpu, held] : e.gpu_byte_seconds) gpus[std::to_string(gpu)] = held;
    doc["leftovers"].push_back({{"process", recorded_process_json(e.process)},
                                {"class", e.klass},
                                {"since", e.since},
                                {"seconds", e.seconds(report.until)},
                                {"end",
                                 {{"how", to_string(e.end.how)},
                                  {"time", or_null(e.end.time)},
                                  {"by_user", text_or_null(e.end.by_user)},
                                  {"by_command", text_or_null(e.end.by_command)},
                                  {"detail", text_or_null(e.end.detail)}}},
                                {"gib_hours", gib_hours(e.byte_seconds)},
                                {"byte_seconds", e.byte_seconds},
                                {"idle_byte_seconds", e.idle_byte_seconds},
                                {"known_byte_seconds", e.known_byte_seconds},
                                {"gpus", gpus},
                                {"classes", e.class_byte_seconds},
                                {"peak_bytes", e.peak_bytes},
                                {"members", e.members},
                                {"memory_back_seconds", or_null(e.memory_back_seconds)}});
  }
  for (const UnattributedCost& u : report.unattributed) {
    doc["unattributed"].push_back({{"gpu", u.gpu},
                                   {"gib_hours", gib_hours(u.byte_seconds)},
                                   {"byte_seconds", u.byte_seconds},
                                   {"seconds", u.seconds},
                                   {"peak_bytes", u.peak_bytes}});
  }
  return doc;
}

}  // namespace gpuclean::output
