#include "output/kill_view.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "core/diagnostics.h"
#include "core/duration.h"
#include "core/units.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/owner_text.h"
#include "output/text_width.h"
#include "output/tree_text.h"
#include "output/who_view.h"

namespace gpuclean::output {
namespace {

constexpr const char* kForkedAfterThePlan = "forked after the plan";

std::string target_row(const KillTarget& t, int depth, std::size_t owner_width, std::size_t width) {
  const ProcessInfo& p = t.process;
  std::string memory = "-";
  Bytes total = 0;
  for (const auto& [gpu, bytes] : t.gpu_memory) total += bytes;
  if (total > 0) memory = format_bytes(total);
  // Cut only to a terminal's width: into a pipe or a file the command stays whole. A width in
  // columns is at most as many bytes, so a command cut there still fills the row.
  const bool terminal = width < static_cast<std::size_t>(kNoWidthLimit);
  const std::string row =
      fmt::format("  {:>8}  {:<10} {:<5} {:<13} {:>9}  {}{}{}{}", p.pid, escape_terminal(p.user),
                  state_label(p), to_string(t.klass), memory, owner_cell(p.owner, owner_width, 2),
                  tree_indent(depth), depth_mark(depth),
                  command_label(p, terminal ? width : std::numeric_limits<std::size_t>::max()));
  return (terminal ? cut_to_columns(row, width) : row) + '\n';
}

std::string steps_text(const KillSteps& s) {
  if (s.signal == 9) return "KILL";
  return fmt::format("STOP, {}+CONT{}", s.signal_name,
                     s.kill9 ? ", KILL after " + format_duration(Duration(s.grace_ms)) : "");
}

// One process met: gone (how, how fast), a zombie left to its parent, or remaining/skipped
// with why and its threads.
void render_met(std::ostream& out, const KillMet& m) {
  const TargetOutcome& outcome = m.outcome;
  const ProcessInfo& p = m.target.process;
  const std::string name = escape_terminal(p.comm);
  const std::string sent = fmt::format("{}", fmt::join(outcome.signals, ","));
  if (outcome.state == TargetOutcome::State::kGone && p.state == 'Z' &&
      m.target.klass == HolderClass::kZombie) {
    // It had exited before the plan: signals cannot remove a zombie, only its parent's
    // wait() can, and it holds no GPU memory (docs/reference.md problem 7).
    out << fmt::format(
        "  zombie   {:>8} ({}) had already exited; parent {} ({}) has not reaped it: harmless "
        "to the GPU\n",
        outcome.pid, name, p.ppid,
        m.unreaping_parent.empty() ? "?" : escape_terminal(m.unreaping_parent));
  } else if (outcome.state == TargetOutcome::State::kGone) {
    out << fmt::format("  gone     {:>8} ({}) after {} in {:.2f} s{}\n", outcome.pid, name,
                       sent.empty() ? "nothing" : sent, outcome.seconds,
                       m.target.why == kForkedAfterThePlan ? " (forked after the plan)" : "");
  } else {
    out << fmt::format("  {}  {:>8} ({}): {}\n",
                       outcome.state == TargetOutcome::State::kRemaining ? "REMAINS" : "skipped",
                       outcome.pid, name, escape_terminal(outcome.reason));
    for (const ThreadInfo& th : outcome.threads) {
      out << fmt::format("             thread {} state {}{}\n", th.tid, th.state,
                         th.wchan.empty() ? "" : " wchan " + escape_terminal(th.wchan));
    }
  }
}

void render_left(std::ostream& out, const KillLeft& left) {
  for (const std::string& line : left.memory) out << "  memory   " << line << '\n';
  if (left.memory_back_seconds) {
    out << fmt::format("  GPU memory of the targets released ({:.2f} s)\n",
                       *left.memory_back_seconds);
  }
  for (const std::string& line : left.still_held) {
    out << "  still held by others: " << escape_terminal(line) << '\n';
  }
  for (const std::string& line : left.warnings)
    out << "  warning: " << escape_terminal(line) << '\n';
}

nlohmann::json met_json(const KillMet& m) {
  nlohmann::json threads = nlohmann::json::array();
  for (const ThreadInfo& th : m.outcome.threads) {
    threads.push_back({{"tid", th.tid}, {"state", std::string(1, th.state)}, {"wchan", th.wchan}});
  }
  const ProcessInfo& p = m.target.process;
  return {{"pid", m.outcome.pid},
          {"start_ticks", p.start_ticks},
          {"class", to_string(m.target.klass)},
          {"why", m.target.why},
          {"comm", p.comm},
          {"owner", p.owner ? to_json(*p.owner) : nlohmann::json()},
          {"outcome", to_string(m.outcome.state)},
          {"signals", m.outcome.signals},
          {"signal_errors", m.outcome.signal_errors},
          {"reason", m.outcome.reason},
          {"seconds", m.outcome.seconds},
          {"threads", threads}};
}

}  // namespace

void render_kill_plan_text(std::ostream& out, const KillPlan& plan, const KillSteps& steps,
                           std::size_t width) {
  out << fmt::format("Plan: {} process{} ({}; wait up to {})\n", plan.targets.size(),
                     plan.targets.size() == 1 ? "" : "es", steps_text(steps),
                     format_duration(Duration(steps.wait_ms)));
  std::vector<const std::optional<Owner>*> owners;
  for (const KillTarget& target : plan.targets) owners.push_back(&target.process.owner);
  const std::size_t owner_width = owner_column_width(owners);
  out << cut_to_columns(
             fmt::format("  {:>8}  {:<10} {:<5} {:<13} {:>9}  {}{}", "PID", "USER", "STATE",
                         "CLASS", "MEMORY",
                         owner_width > 0 ? fmt::format("{:<{}}  ", "OWNER", owner_width) : "",
                         "COMMAND"),
             width)
      << '\n';
  // Targets are sorted parents first, so a parent's depth is known before its children's.
  std::map<Pid, int> depth;
  for (const KillTarget& target : plan.targets) {
    auto parent = depth.find(target.process.ppid);
    depth[target.process.pid] = parent == depth.end() ? 0 : parent->second + 1;
    out << target_row(target, depth[target.process.pid], owner_width, width);
  }
  out << std::flush;
}

std::vector<std::string> skipped_lines(const std::vector<KillSkip>& skipped) {
  constexpr std::size_t kAlone = 3;   // up to this many share a reason: a line each
  constexpr std::size_t kListed = 8;  // PIDs named in a summary line
  std::map<std::string, std::vector<Pid>> by_reason;
  std::vector<std::string> reasons;  // in the order first met
  for (const KillSkip& s : skipped) {
    auto& pids = by_reason[s.reason];
    if (pids.empty()) reasons.push_back(s.reason);
    pids.push_back(s.pid);
  }
  std::vector<std::string> lines;
  for (const std::string& reason : reasons) {
    const std::vector<Pid>& pids = by_reason[reason];
    const std::string why = escape_terminal(reason);
    if (pids.size() <= kAlone) {
      for (Pid pid : pids) lines.push_back(fmt::format("not touching pid {}: {}", pid, why));
      continue;
    }
    const std::size_t named = std::min(kListed, pids.size());
    const std::vector<Pid> shown(pids.begin(), pids.begin() + static_cast<std::ptrdiff_t>(named));
    lines.push_back(fmt::format("not touching {} processes: {} (pids {}{})", pids.size(), why,
                                fmt::join(shown, ", "), shown.size() < pids.size() ? ", …" : ""));
  }
  return lines;
}

nlohmann::json kill_dry_run_json(const KillDryRun& dry_run, const std::string& host, double now) {
  const KillPlan& plan = dry_run.plan;
  const KillSteps& steps = dry_run.steps;
  nlohmann::json doc = document_header(host, now);
  doc["dry_run"] = true;
  doc["steps"] = {{"signal", steps.signal},
                  {"signal_name", steps.signal_name},
                  {"kill9", steps.kill9},
                  {"grace_ms", steps.grace_ms},
                  {"wait_ms", steps.wait_ms}};
  doc["targets"] = nlohmann::json::array();
  for (const KillTarget& target : plan.targets) {
    const ProcessInfo& p = target.process;
    nlohmann::json row{{"pid", p.pid},
                       {"start_ticks", p.start_ticks},
                       {"ppid", p.ppid},
                       {"user", p.user},
                       {"state", std::string(1, p.state)},
                       {"threads", p.threads.size()},
                       {"class", to_string(target.klass)},
                       {"why", target.why},
                       {"comm", p.comm},
                       {"cmdline", p.cmdline},
                       {"gpu_memory", gpu_memory_json(target.gpu_memory)}};
    row["owner"] = p.owner ? to_json(*p.owner) : nlohmann::json();
    row["inherited_from"] = or_null(target.inherited_from);
    doc["targets"].push_back(std::move(row));
  }
  doc["skipped"] = nlohmann::json::array();
  for (const KillSkip& skip : plan.skipped) {
    doc["skipped"].push_back({{"pid", skip.pid}, {"reason", skip.reason}});
  }
  doc["not_found"] = plan.not_found;
  doc["confirm_reasons"] = plan.confirm_reasons;
  return doc;
}

void render_kill_report_text(std::ostream& out, const KillReport& report) {
  for (const KillMet& m : report.met) render_met(out, m);
  const KillLeft& left = report.left;
  render_left(out, left);
  // Said where it applies, as top's kill pane says it: nothing above speaks of GPU memory then.
  const std::string unchecked =
      report.memory == MemoryCheck::kNotChecked ? "; GPU memory not checked: no NVML" : "";
  const std::size_t count = report.met.size();
  if (report.remaining == 0 && left.memory.empty()) {
    say(out, "kill") << fmt::format(
        "all {} target{} gone ({:.2f} s){}{}\n", count, count == 1 ? "" : "s", report.seconds,
        left.still_held.empty() ? "" : "; others still hold the files", unchecked);
  } else {
    say(out, "kill") << fmt::format("{} of {} target{} remain{}{}{}\n", report.remaining, count,
                                    count == 1 ? "" : "s", report.remaining == 1 ? "s" : "",
                                    left.memory.empty() ? "" : "; GPU memory not released",
                                    unchecked);
  }
  if (report.leftovers && !left.leftovers.empty()) {
    const std::size_t n = left.leftovers.size();
    say(out, "kill") << fmt::format(
        "{} leftover{} still there (above; one still computing is skipped "
        "until --include-busy takes it)\n",
        n, n == 1 ? " is" : "s are");
  }
  if (report.memory == MemoryCheck::kFailed) {
    say(out, "kill") << "GPU memory not verified: " << escape_terminal(report.gpu_not_verified)
                     << '\n';
  } else if (report.verdict == Verdict::kUnknown) {
    say(out, "kill") << "verdict unknown: the look after the kill could not read every "
                        "process, and without NVML nothing else shows what they hold ("
                     << escape_terminal(left.unseen) << ")\n";
  }
}

nlohmann::json kill_report_json(const KillReport& report) {
  nlohmann::json doc = document_header(report.host, report.time);
  doc["verdict"] = to_string(report.verdict);
  if (!report.gpu_not_verified.empty()) doc["gpu_not_verified"] = report.gpu_not_verified;
  const KillLeft& left = report.left;
  // What the look after the kill could not read (diagnose/unseen.h), or null.
  doc["unseen"] = text_or_null(left.unseen);
  nlohmann::json targets = nlohmann::json::array();
  for (const KillMet& m : report.met) targets.push_back(met_json(m));
  doc["targets"] = targets;
  nlohmann::json skips = nlohmann::json::array();
  for (const KillSkip& s : report.skipped) skips.push_back({{"pid", s.pid}, {"reason", s.reason}});
  doc["skipped"] = skips;
  doc["not_found"] = report.not_found;
  doc["gpu_memory_left"] = left.memory;
  doc["memory_back_seconds"] = or_null(left.memory_back_seconds);
  doc["still_held_by"] = left.still_held;
  // With --leftovers: the leftovers still there (of still_held_by), which make it exit 1.
  doc["leftovers_left"] = report.leftovers ? nlohmann::json(left.leftovers) : nlohmann::json();
  doc["warnings"] = left.warnings;
  doc["seconds"] = report.seconds;
  return doc;
}

nlohmann::json kill_action_json(const KillReport& report, const std::vector<std::string>& args,
                                int exit_code) {
  nlohmann::json targets = nlohmann::json::array();
  std::size_t ended = 0;
  for (const KillMet& m : report.met) {
    if (m.outcome.state == TargetOutcome::State::kGone) ++ended;
    if (targets.size() == kMaxActionTargets) continue;
    targets.push_back({{"pid", m.outcome.pid},
                       {"start_ticks", m.target.process.start_ticks},
                       {"comm", m.target.process.comm},
                       {"class", to_string(m.target.klass)},
                       {"outcome", to_string(m.outcome.state)}});
  }
  std::string summary = fmt::format("{} of {} targets gone", ended, report.met.size());
  if (report.remaining > 0) summary += fmt::format(", {} remain", report.remaining);
  if (report.left.memory_back_seconds) {
    summary += fmt::format(", GPU memory back in {:.2f} s", *report.left.memory_back_seconds);
  } else if (!report.left.memory.empty()) {
    summary += ", GPU memory still held";
  }
  return {{"command", "kill"},
          {"args", args},
          {"exit", exit_code},
          {"verdict", to_string(report.verdict)},
          {"summary", summary},
          {"targets", targets},
          {"memory_back_seconds", or_null(report.left.memory_back_seconds)}};
}

std::string not_verified_text(MemoryCheck memory, NvmlState nvml_state,
                              const std::string& message) {
  switch (memory) {
    case MemoryCheck::kVerified:
      return "";
    case MemoryCheck::kNotChecked:
      return fmt::format("GPU memory not checked: no NVML ({}{})", to_string(nvml_state),
                         message.empty() ? "" : ": " + message);
    case MemoryCheck::kFailed:
      return "NVML failed: " + message;
  }
  return "";
}

}  // namespace gpuclean::output
