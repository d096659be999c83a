#include "cli/kill_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cli/help.h"
#include "cli/test_hooks.h"
#include "cli/usage_error.h"
#include "collect/gather.h"
#include "core/duration.h"
#include "core/units.h"
#include "diagnose/classify.h"
#include "diagnose/diagnosis.h"
#include "diagnose/kill_plan.h"
#include "diagnose/kill_verdict.h"
#include "diagnose/unseen.h"
#include "ops/cgroup.h"
#include "ops/signals.h"
#include "ops/teardown.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/owner_text.h"
#include "output/text_width.h"
#include "output/tree_text.h"
#include "output/who_view.h"
#include "procfs/process_table.h"
#include "procfs/user_names.h"

namespace gpuclean::cli {
namespace {

using Clock = std::chrono::steady_clock;
using diagnose::KillPlan;
using diagnose::KillTarget;

// kill always works on the kernel's own view: no test root ever reaches it (docs/reference.md).
constexpr const char* kRealProc = "/proc";
// How often the verification asks NVML whether the targets' memory is back. An NVML query is
// ~0.03 ms in-process (docs/facts.md); the release itself takes ~0.12–0.16 s after the exit.
constexpr auto kVerifyPoll = std::chrono::milliseconds(25);

struct Parsed {
  ops::TeardownOptions teardown;
  diagnose::KillSelectors selectors;
};

// Flags → teardown options and selectors. Names that select nothing (an unknown user, a
// cgroup that does not exist) are usage errors with the reason: a typo must not become an
// empty plan that "succeeds".
std::optional<Parsed> parse_options(const KillOptions& o, const Io& io) {
  Parsed parsed;
  auto fail = [&io](const std::string& what) {
    io.err << usage_message("kill", what);
    return std::nullopt;
  };
  auto signal = ops::parse_signal(o.signal);
  if (!signal.ok()) return fail("--signal " + signal.error().message());
  auto grace = parse_duration(o.grace);
  if (!grace.ok()) return fail("--grace " + grace.error().message());
  auto wait = parse_duration(o.wait);
  if (!wait.ok()) return fail("--wait " + wait.error().message());
  parsed.teardown = {*signal, *grace, !o.no_kill9, *wait, {}};

  diagnose::KillSelectors& s = parsed.selectors;
  for (const std::string& text : o.pids) {
    const auto selector = parse_pid_selector(text);  // pid_selector_check let only these in
    if (!selector) return fail("'" + text + "' is not a PID");
    s.pids.push_back(selector->pid);
    if (!selector->start_ticks) continue;
    const auto [at, added] = s.start_ticks.emplace(selector->pid, *selector->start_ticks);
    if (!added && at->second != *selector->start_ticks) {
      return fail("pid " + std::to_string(selector->pid) + " is given with two start times");
    }
  }
  s.tree = !o.no_tree;
  s.sessions = o.sessions;
  s.pgids = o.pgids;
  s.holders = o.holders || !o.gpu.empty();
  s.leftovers = o.leftovers;
  auto gpus = parse_gpu_list(o.common.gpus);
  if (!gpus.ok()) return fail(gpus.error().message());
  if (!o.gpu.empty()) {
    if (gpus->has_value()) return fail("give either --gpu N or --gpus LIST, not both");
    s.gpus = std::set<unsigned>(o.gpu.begin(), o.gpu.end());
  } else {
    s.gpus = *gpus;
  }
  // A GPU selection narrows holders; with PIDs, sessions, users, … it would silently select
  // nothing less — say so instead.
  if (s.gpus && !s.holders && !s.leftovers) {
    // `kill --gpus 2` alone: --gpu 2 was meant.
    const bool alone = s.pids.empty() && s.sessions.empty() && s.pgids.empty() && o.users.empty() &&
                       o.cgroups.empty() && o.jobs.empty() && o.containers.empty();
    if (alone) {
      const std::string& list = o.common.gpus;
      return fail("--gpus " + list + " only narrows other selectors; to end the holders of " +
                  (s.gpus->size() == 1 ? "GPU " + list + " use --gpu " + list + " (or "
                                       : "GPUs " + list + " use (") +
                  "--holders --gpus " + list + ")");
    }
    return fail(
        "--gpus narrows --holders and --leftovers only (which GPU a process uses is "
        "known only for holders)");
  }
  for (const std::string& user : o.users) {
    auto uid = procfs::uid_of_user(user);
    if (!uid.ok()) return fail("--user: " + uid.error().message());
    s.users.push_back(*uid);
  }
  for (const std::string& cgroup : o.cgroups) {
    auto found = ops::find_cgroup(kRealProc, cgroup);
    if (!found.ok()) return fail("--cgroup: " + found.error().message());
    s.cgroups.push_back(found->path);
  }
  s.owners.jobs = o.jobs;
  s.owners.containers = o.containers;
  return parsed;
}

// A container ID prefix that names several containers is refused (as docker does): which one was
// meant is the user's to say.
std::optional<std::string> ambiguous_container(const ProcessTable& table,
                                               const diagnose::OwnerSelector& owners) {
  std::vector<const ProcessInfo*> processes;
  processes.reserve(table.size());
  for (const auto& entry : table) processes.push_back(&entry.second);
  for (const std::string& prefix : owners.containers) {
    const std::set<std::string> found = diagnose::containers_with_prefix(processes, prefix);
    if (found.size() < 2) continue;
    std::string list;
    for (const std::string& id : found) list += (list.empty() ? "" : ", ") + id.substr(0, 16);
    return fmt::format("--container {} matches {} containers ({}); give more of the ID", prefix,
                       found.size(), list);
  }
  return std::nullopt;
}

// A GPU selection must name GPUs NVML has: `kill --gpu 7` on a 2-GPU host selects nothing,
// and saying "nothing to kill" would hide the typo.
std::optional<std::string> unknown_gpu(const std::set<unsigned>& wanted, const GpuView& view) {
  std::set<unsigned> known;
  for (const Gpu& gpu : view.gpus) known.insert(gpu.index);
  for (unsigned index : wanted) {
    if (known.count(index) > 0) continue;
    return fmt::format("no GPU {}: NVML sees {} GPU{}{}", index, known.size(),
                       known.size() == 1 ? "" : "s",
                       known.empty() ? "" : fmt::format(" ({})", fmt::join(known, ", ")));
  }
  return std::nullopt;
}

std::string target_row(const KillTarget& t, int depth, std::size_t owner_width) {
  const ProcessInfo& p = t.process;
  std::string memory = "-";
  Bytes total = 0;
  for (const auto& [gpu, bytes] : t.gpu_memory) total += bytes;
  if (total > 0) memory = format_bytes(total);
  return fmt::format("  {:>8}  {:<10} {:<5} {:<13} {:>9}  {}{}{}{}\n", p.pid,
                     output::escape_terminal(p.user), output::state_label(p), to_string(t.klass),
                     memory, output::owner_cell(p.owner, owner_width, 2),
                     output::tree_indent(depth), output::depth_mark(depth),
                     output::command_label(p, 100));
}

void print_plan(const KillPlan& plan, const ops::TeardownOptions& t, const Io& io) {
  const std::string steps =
      t.signal == 9
          ? "KILL"
          : fmt::format("STOP, {}+CONT{}", ops::signal_name(t.signal),
                        t.kill9 ? fmt::format(", KILL after {} ms", t.grace.count()) : "");
  io.out << fmt::format("Plan: {} process{} ({}; wait up to {} ms)\n", plan.targets.size(),
                        plan.targets.size() == 1 ? "" : "es", steps, t.wait.count());
  std::vector<const std::optional<Owner>*> owners;
  for (const KillTarget& target : plan.targets) owners.push_back(&target.process.owner);
  const std::size_t owner_width = output::owner_column_width(owners);
  io.out << fmt::format(
      "  {:>8}  {:<10} {:<5} {:<13} {:>9}  {}{}\n", "PID", "USER", "STATE", "CLASS", "MEMORY",
      owner_width > 0 ? fmt::format("{:<{}}  ", "OWNER", owner_width) : "", "COMMAND");
  // Targets are sorted parents first, so a parent's depth is known before its children's.
  std::map<Pid, int> depth;
  for (const KillTarget& target : plan.targets) {
    auto parent = depth.find(target.process.ppid);
    depth[target.process.pid] = parent == depth.end() ? 0 : parent->second + 1;
    io.out << target_row(target, depth[target.process.pid], owner_width);
  }
  io.out << std::flush;
}

// Asks for the plan's confirmation: nullopt to go on, or the exit code. Without a terminal the
// missing --yes is a usage error (2); a "no" at the prompt is nothing done (1).
std::optional<int> unconfirmed(const KillPlan& plan, const Io& io, bool interactive) {
  if (!interactive) {
    io.err << "gpuclean: kill: add --yes to act on this plan (";
    for (std::size_t i = 0; i < plan.confirm_reasons.size(); ++i) {
      io.err << (i > 0 ? "; " : "") << output::escape_terminal(plan.confirm_reasons[i]);
    }
    io.err << ")\n";
    return kExitUsage;
  }
  for (const std::string& reason : plan.confirm_reasons) {
    io.err << "gpuclean: kill: " << output::escape_terminal(reason) << '\n';
  }
  const std::size_t count = plan.targets.size();
  io.err << "Kill " << count << (count == 1 ? " process" : " processes") << "? [y/N] "
         << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  if (answer == "y" || answer == "Y" || answer == "yes") return std::nullopt;
  io.err << "gpuclean: kill: not confirmed; nothing was signalled\n";
  return kExitDirty;
}

// What the GPUs say after the teardown.
struct Verification {
  std::optional<double> memory_back_seconds;  // when NVML stopped listing the targets
  std::vector<std::string> memory_left;       // "GPU 0: 8.0 GiB still listed for pid 442"
  // The errors status would report that are not the targets': holders left and memory nobody
  // visible accounts for. Non-empty: the verdict is dirty (JSON's still_held_by).
  std::vector<std::string> still_held;
  // Warnings of processes that were not targets (a stray context): said, the verdict stays.
  std::vector<std::string> warnings;
  // The targets had GPU memory, but no NVML answer came after the teardown (NVML failed or
  // stopped answering mid-kill): whether it is back is unknown, never "clean".
  bool unanswered = false;
  // NVML's state in the look after the teardown (kFailed: the memory judgement is not known).
  NvmlState nvml_after = NvmlState::kDisabled;
  std::string nvml_after_message;
  // That look could not read every process in a way that could hide a holder
  // (diagnose::KillAftermath::unseen, diagnose/unseen.h).
  bool unseen = false;
  std::string unseen_message;
};

// A problem of a process that was not a target: an error makes the selection dirty
// (still_held_by), a warning is only said.
void note_other(Verification& v, const Problem& p) {
  (p.severity == Severity::kWarning ? v.warnings : v.still_held).push_back(p.message);
}

// Polls NVML alone (no /proc scan) until it stops listing `listed` or `wait` passes; then one
// full look for what others still hold. Bytes still listed for a target are not reported a
// second time as "unattributed" (issue 13 item 11).
Verification verify(collect::Gatherer& gatherer, const std::set<Pid>& listed,
                    const std::set<Pid>& target_pids, const diagnose::Options& diagnose_options,
                    Clock::time_point started, Duration wait, bool survivors) {
  Verification v;
  // GPU → PID → bytes: one figure per PID (its largest list), summed over PIDs.
  std::map<unsigned, std::map<Pid, Bytes>> left_by_pid;
  std::map<unsigned, Bytes> left_bytes;
  auto still_listed = [&](const GpuView& view) {
    v.memory_left.clear();
    left_by_pid.clear();
    left_bytes.clear();
    for (const Gpu& gpu : view.gpus) {
      for (const GpuProcess& p : gpu.processes) {
        if (listed.count(p.pid) == 0) continue;
        const Bytes bytes = p.used_memory.value_or(0);
        v.memory_left.push_back(fmt::format("GPU {}: {} still listed for pid {}", gpu.index,
                                            format_bytes(bytes), p.pid));
        Bytes& figure = left_by_pid[gpu.index][p.pid];
        figure = std::max(figure, bytes);
      }
    }
    for (const auto& [gpu, pids] : left_by_pid) {
      for (const auto& [pid, bytes] : pids) left_bytes[gpu] += bytes;
    }
    return !v.memory_left.empty();
  };
  if (!listed.empty()) {
    // A survivor (stuck in D, frozen) keeps its memory whatever the wait: one look, no poll.
    const auto deadline = survivors ? Clock::now() : Clock::now() + wait;
    v.unanswered = true;
    while (true) {
      auto view = gatherer.query_gpu_view();
      if (view) v.unanswered = false;
      if (view && !still_listed(*view)) {
        v.memory_back_seconds = std::chrono::duration<double>(Clock::now() - started).count();
        break;
      }
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(kVerifyPoll);
    }
  }
  collect::Gathered after = gatherer.collect();
  v.nvml_after = after.nvml_state;
  v.nvml_after_message = after.nvml_message;
  const diagnose::Unseen unseen = collect::unseen_in(after);
  v.unseen = unseen.decides;
  v.unseen_message = unseen.message;
  const Diagnosis now = diagnose::diagnose(std::move(after.input), diagnose_options);
  for (const Problem& p : now.problems) {
    if (p.pid && (target_pids.count(*p.pid) > 0 || listed.count(*p.pid) > 0)) continue;
    if (p.kind == "unattributed" && p.gpu && left_bytes.count(*p.gpu) > 0) {
      // The unattributed rest includes the bytes still listed for a target (gone from /proc,
      // so nobody visible accounts for them): only what is beyond them is someone else's.
      const auto report = std::find_if(now.gpus.begin(), now.gpus.end(),
                                       [&](const GpuReport& r) { return r.gpu.index == *p.gpu; });
      if (report == now.gpus.end()) continue;
      const Bytes beyond =
          report->unattributed > left_bytes[*p.gpu] ? report->unattributed - left_bytes[*p.gpu] : 0;
      if (beyond <= diagnose_options.max_unattributed) continue;
      v.still_held.push_back(
          fmt::format("GPU {}: {} used beyond the targets' that no visible "
                      "process accounts for",
                      *p.gpu, format_bytes(beyond)));
      continue;
    }
    note_other(v, p);
  }
  return v;
}

// How the GPU memory was looked at: NVML off or absent, failing (at the start, or with no
// answer after the teardown), or answering.
diagnose::MemoryCheck memory_check(NvmlState before, const Verification& v) {
  if (before == NvmlState::kAbsent || before == NvmlState::kDisabled) {
    return diagnose::MemoryCheck::kNotChecked;
  }
  if (before == NvmlState::kFailed || v.unanswered || v.nvml_after == NvmlState::kFailed) {
    return diagnose::MemoryCheck::kFailed;
  }
  return diagnose::MemoryCheck::kVerified;
}

// The verdict on the selection after the kill (diagnose/kill_verdict.h).
Verdict verdict_after(std::size_t targets_left, const Verification& v,
                      diagnose::MemoryCheck memory) {
  return diagnose::kill_verdict({.targets_left = targets_left,
                                 .memory_left = v.memory_left.size(),
                                 .others_left = v.still_held.size(),
                                 .memory = memory,
                                 .unseen = v.unseen});
}

// Why the GPU memory was not verified, for JSON's gpu_not_verified; empty when it was.
std::string not_verified_text(diagnose::MemoryCheck memory, NvmlState nvml_state,
                              const std::string& nvml_message) {
  switch (memory) {
    case diagnose::MemoryCheck::kVerified:
      return "";
    case diagnose::MemoryCheck::kNotChecked:
      return fmt::format("GPU memory not checked: no NVML ({}{})", to_string(nvml_state),
                         nvml_message.empty() ? "" : ": " + nvml_message);
    case diagnose::MemoryCheck::kFailed:
      return "NVML failed: " + nvml_message;
  }
  return "";
}

// Everything the report needs about one target: each planned one, and each process forked
// after the plan that the teardown met.
struct Met {
  ops::TargetOutcome outcome;
  KillTarget target;
};

std::vector<Met> met_processes(const KillPlan& plan, const ops::RoundsOutcome& rounds) {
  std::map<std::pair<Pid, std::uint64_t>, std::size_t> found;
  for (std::size_t i = 0; i < rounds.found.size(); ++i) {
    found[{rounds.found[i].pid, rounds.found[i].start_ticks}] = i;
  }
  std::vector<Met> out;
  for (const KillTarget& target : plan.targets) {
    auto it = found.find({target.process.pid, target.process.start_ticks});
    if (it != found.end()) {
      out.push_back({rounds.outcomes[it->second], target});
      found.erase(it);
      continue;
    }
    // Never a member: it had exited (or was a zombie) before the first signal.
    ops::TargetOutcome gone;
    gone.pid = target.process.pid;
    gone.state = ops::TargetOutcome::State::kGone;
    gone.reason = "already gone";
    out.push_back({gone, target});
  }
  for (const auto& [identity, index] : found) {
    KillTarget late;
    late.process = rounds.found[index];
    late.klass = diagnose::classify_from_proc(late.process);
    late.why = "forked after the plan";
    out.push_back({rounds.outcomes[index], std::move(late)});
  }
  return out;
}

// `not_verified`: why the GPU memory was not verified (gpu_not_verified), empty when it was.
void print_json(const KillPlan& plan, const std::vector<Met>& met, const Verification& v,
                Verdict verdict, const std::string& not_verified, double seconds, const Io& io) {
  nlohmann::json doc = output::document_header(host_name(), unix_now());
  doc["verdict"] = to_string(verdict);
  if (!not_verified.empty()) doc["gpu_not_verified"] = not_verified;
  // What the look after the kill could not read (diagnose/unseen.h), or null.
  doc["unseen"] = v.unseen_message.empty() ? nlohmann::json() : nlohmann::json(v.unseen_message);
  nlohmann::json list = nlohmann::json::array();
  for (const Met& m : met) {
    nlohmann::json threads = nlohmann::json::array();
    for (const ThreadInfo& th : m.outcome.threads) {
      threads.push_back(
          {{"tid", th.tid}, {"state", std::string(1, th.state)}, {"wchan", th.wchan}});
    }
    list.push_back({{"pid", m.outcome.pid},
                    {"start_ticks", m.target.process.start_ticks},
                    {"class", to_string(m.target.klass)},
                    {"why", m.target.why},
                    {"comm", m.target.process.comm},
                    {"owner", m.target.process.owner ? output::to_json(*m.target.process.owner)
                                                     : nlohmann::json()},
                    {"outcome", ops::to_string(m.outcome.state)},
                    {"signals", m.outcome.signals},
                    {"signal_errors", m.outcome.signal_errors},
                    {"reason", m.outcome.reason},
                    {"seconds", m.outcome.seconds},
                    {"threads", threads}});
  }
  doc["targets"] = list;
  nlohmann::json skips = nlohmann::json::array();
  for (const auto& s : plan.skipped) skips.push_back({{"pid", s.pid}, {"reason", s.reason}});
  doc["skipped"] = skips;
  doc["not_found"] = plan.not_found;
  doc["gpu_memory_left"] = v.memory_left;
  doc["memory_back_seconds"] =
      v.memory_back_seconds ? nlohmann::json(*v.memory_back_seconds) : nlohmann::json();
  doc["still_held_by"] = v.still_held;
  doc["warnings"] = v.warnings;
  doc["seconds"] = seconds;
  output::write_json(io.out, doc);
}

void print_text(const std::vector<Met>& met, const Verification& v, const ProcessTable& table,
                std::size_t remaining, bool ok, diagnose::MemoryCheck memory, double seconds,
                const Io& io) {
  for (const Met& m : met) {
    const ops::TargetOutcome& outcome = m.outcome;
    const ProcessInfo& p = m.target.process;
    const std::string name = output::escape_terminal(p.comm);
    const std::string sent = fmt::format("{}", fmt::join(outcome.signals, ","));
    if (outcome.state == ops::TargetOutcome::State::kGone && p.state == 'Z' &&
        m.target.klass == HolderClass::kZombie) {
      // It had exited before the plan: signals cannot remove a zombie, only its parent's
      // wait() can, and it holds no GPU memory (docs/reference.md problem 7).
      const auto parent = table.find(p.ppid);
      io.out << fmt::format(
          "  zombie   {:>8} ({}) had already exited; parent {} ({}) has not reaped it: harmless "
          "to the GPU\n",
          outcome.pid, name, p.ppid,
          parent == table.end() ? "?" : output::escape_terminal(parent->second.comm));
    } else if (outcome.state == ops::TargetOutcome::State::kGone) {
      io.out << fmt::format(
          "  gone     {:>8} ({}) after {} in {:.2f} s{}\n", outcome.pid, name,
          sent.empty() ? "nothing" : sent, outcome.seconds,
          m.target.why == "forked after the plan" ? " (forked after the plan)" : "");
    } else {
      io.out << fmt::format(
          "  {}  {:>8} ({}): {}\n",
          outcome.state == ops::TargetOutcome::State::kRemaining ? "REMAINS" : "skipped",
          outcome.pid, name, output::escape_terminal(outcome.reason));
      for (const ThreadInfo& th : outcome.threads) {
        io.out << fmt::format(
            "             thread {} state {}{}\n", th.tid, th.state,
            th.wchan.empty() ? "" : " wchan " + output::escape_terminal(th.wchan));
      }
    }
  }
  for (const std::string& line : v.memory_left) io.out << "  memory   " << line << '\n';
  if (v.memory_back_seconds) {
    io.out << fmt::format("  GPU memory of the targets released ({:.2f} s)\n",
                          *v.memory_back_seconds);
  }
  for (const std::string& line : v.still_held)
    io.out << "  still held by others: " << output::escape_terminal(line) << '\n';
  for (const std::string& line : v.warnings)
    io.out << "  warning: " << output::escape_terminal(line) << '\n';
  // Said where it applies, as top's kill pane says it: nothing above speaks of GPU memory then.
  const std::string unchecked =
      memory == diagnose::MemoryCheck::kNotChecked ? "; GPU memory not checked: no NVML" : "";
  if (ok) {
    io.out << fmt::format("gpuclean: kill: all {} target{} gone ({:.2f} s){}{}\n", met.size(),
                          met.size() == 1 ? "" : "s", seconds,
                          v.still_held.empty() ? "" : "; others still hold the files", unchecked);
  } else {
    io.out << fmt::format("gpuclean: kill: {} of {} targets remain{}{}\n", remaining, met.size(),
                          v.memory_left.empty() ? "" : "; GPU memory not released", unchecked);
  }
}

}  // namespace

void add_kill_command(CLI::App& app, KillOptions& o) {
  CLI::App* kill = app.add_subcommand(
      "kill", "Tear down exactly the selected processes, escalate, and verify they are gone");
  add_common_options(*kill, o.common, HookScope::kAct);
  kill->add_option("pids", o.pids,
                   "These processes and their descendants; PID@START: only while PID is still "
                   "the process that started at START (clock ticks, start_ticks in --json)")
      ->option_text("PID[@START]...")
      ->check(pid_selector_check());
  kill->add_flag("--no-tree", o.no_tree, "Only the PIDs given, not their descendants");
  kill->add_option("--session", o.sessions, "Every process of session SID")
      ->option_text("SID")
      ->check(pid_check(false, "session ID"));
  kill->add_option("--pgid", o.pgids, "Every process of process group PGID")
      ->option_text("PGID")
      ->check(pid_check(false, "process group ID"));
  kill->add_flag("--holders", o.holders, "Every process holding the selected device files");
  kill->add_option("--gpu", o.gpu, "Holders on GPU N (short for --holders --gpus N)")
      ->option_text("N")
      ->check(whole_number_check(0, 1023));
  kill->add_option("--user", o.users, "Every process of user USER (name or uid)")
      ->option_text("USER");
  kill->add_option("--cgroup", o.cgroups, "Every process in cgroup v2 PATH or below it")
      ->option_text("PATH");
  kill->add_option("--job", o.jobs,
                   "Every process of Slurm job ID on this node, by its cgroup (for an Epilog)")
      ->option_text("ID")
      ->check(job_id_check());
  kill->add_option("--container", o.containers,
                   "Every process of the container whose ID starts with ID")
      ->option_text("ID")
      ->check(container_id_check());
  kill->add_flag("--leftovers", o.leftovers, "Holders classed orphan, heir, zombie-leader, stuck");
  kill->add_flag("-y,--yes", o.yes,
                 "Act without asking (needed for selectors other than PIDs, and for a PID whose "
                 "tree reaches other users or sessions)");
  kill->add_flag("--dry-run", o.dry_run, "Print the plan and stop");
  kill->add_option("--signal", o.signal, "First signal: TERM, INT, KILL, 9 ... (default: TERM)")
      ->option_text("SIG");
  kill->add_option("--grace", o.grace, "Time between the signal and SIGKILL (default: 5s)")
      ->option_text("DURATION");
  kill->add_flag("--no-kill9", o.no_kill9, "Never escalate to SIGKILL");
  kill->add_option("--wait", o.wait, "How long to wait for the exits and the memory (default: 30s)")
      ->option_text("DURATION");
  set_help_footer(
      *kill,
      {{"gpuclean kill 72309", "72309 and its descendants, after showing the plan"},
       {"gpuclean kill --leftovers --yes", "every orphan, heir, zombie-led and stuck holder"},
       {"gpuclean kill --gpu 3 --dry-run", "what holding GPU 3 would be ended; nothing is"},
       {"gpuclean kill --signal INT --grace 30s 72309", "SIGINT, then SIGKILL after 30 s"}},
      {"0  every target gone and its memory released, or nothing to kill",
       "1  a target or its memory remains, or the plan was not confirmed",
       "2  usage error: no selector, a protected PID, selecting by GPU without NVML",
       "3  NVML failed: the targets were signalled, their memory not verified"});
}

int run_kill(const KillOptions& o, const Io& io, bool interactive) {
  const auto parsed = parse_options(o, io);
  if (!parsed) return kExitUsage;
  const diagnose::KillSelectors& selectors = parsed->selectors;
  if (selectors.empty()) {
    io.err << usage_message("kill",
                            "no target: give PIDs, or --holders, --gpu N, --leftovers, "
                            "--session, --pgid, --user, --cgroup, --job or --container");
    return kExitUsage;
  }

  // One look at the machine: holders, classes and GPU memory, like `status`.
  CommonOptions common = o.common;
  common.proc_root = kRealProc;
  auto opened = collect::Gatherer::open(common);
  if (auto* error = std::get_if<collect::GatherError>(&opened)) {
    io.err << "gpuclean: kill: " << error->message << '\n';
    return exit_code_of(*error);
  }
  collect::Gatherer& gatherer = *std::get<std::unique_ptr<collect::Gatherer>>(opened);
  gatherer.start_nvml_helper();  // a wedged driver must not keep kill from signalling
  collect::Gathered gathered = gatherer.collect();
  const NvmlState nvml_state = gathered.nvml_state;
  const std::string nvml_message = gathered.nvml_message;
  if (nvml_state == NvmlState::kFailed) {
    // Not asked again: the targets are signalled and reported without another wait on it.
    nvml::OpenedSource failed;
    failed.state = nvml::OpenedSource::State::kFailed;
    failed.message = nvml_message;
    gatherer.use_gpu_source(std::move(failed));
  }
  if (selectors.gpus) {
    // Which GPU a process uses is known only from NVML's (checked) process lists. NVML failing
    // is a runtime failure (exit 3); NVML off or absent makes the selection a usage error.
    if (gathered.nvml_state != NvmlState::kPresent) {
      io.err << "gpuclean: kill: selecting by GPU needs NVML (which GPU a process uses is known "
                "only from NVML's process lists), and NVML is "
             << to_string(gathered.nvml_state)
             << (gathered.nvml_message.empty() ? "" : ": " + gathered.nvml_message) << '\n';
      return gathered.nvml_state == NvmlState::kFailed ? kExitRuntime : kExitUsage;
    }
    if (auto unknown = unknown_gpu(*selectors.gpus, *gathered.input.gpu_view)) {
      io.err << "gpuclean: kill: " << *unknown << '\n';
      return kExitUsage;
    }
  }
  diagnose::Options diagnose_options;
  diagnose_options.gpus = selectors.gpus;
  const Diagnosis diagnosis = diagnose::diagnose(std::move(gathered.input), diagnose_options);

  // The gatherer's /proc: a process whose memory map it found locked is not waited on again.
  const procfs::ProcFs* proc = &gatherer.proc();
  const ProcessTable table = procfs::read_process_table(*proc);
  if (auto ambiguous = ambiguous_container(table, selectors.owners)) {
    io.err << usage_message("kill", *ambiguous);
    return kExitUsage;
  }
  const diagnose::KillContext context{::getpid(), ::geteuid(), ::geteuid() == 0};
  const KillPlan plan =
      diagnose::plan_kill(table, diagnosis.holders, selectors, context, diagnosis.dead_owners);

  for (const auto& r : plan.refused) {
    io.err << "gpuclean: kill: refusing pid " << r.pid << ": " << r.reason
           << "; nothing is planned (its descendants are not implied: name them)\n";
  }
  if (!plan.refused.empty()) return kExitUsage;
  for (Pid pid : plan.not_found) {
    const auto now = table.find(pid);
    if (now == table.end()) {
      io.err << "gpuclean: kill: no such process: " << pid << '\n';
      continue;
    }
    // PID@START and the PID is another process now: the one named is gone.
    io.err << fmt::format(
        "gpuclean: kill: pid {} is no longer the process given (that one started at tick {}; "
        "pid {} now started at tick {}): it is gone, and the new one is not touched\n",
        pid, selectors.start_ticks.at(pid), pid, now->second.start_ticks);
  }
  for (const auto& s : plan.skipped) {
    io.err << "gpuclean: kill: not touching pid " << s.pid << ": " << s.reason << '\n';
  }
  if (plan.targets.empty()) {
    // Every named process already gone is what the caller wanted (an Epilog racing a job's own
    // exit must not drain the node for it); a skipped one is not. Gone is not yet clean: memory
    // NVML still counts for a named PID (being released, or held by an heir) is reported.
    const bool all_gone = !plan.not_found.empty() && plan.not_found.size() == selectors.pids.size();
    std::map<Pid, std::pair<Bytes, std::string>> counted;  // gone PID → memory, who holds it
    auto named_gone = [&plan](Pid pid) {
      return std::find(plan.not_found.begin(), plan.not_found.end(), pid) != plan.not_found.end();
    };
    for (const DeadOwner& owner : diagnosis.dead_owners) {
      if (!named_gone(owner.pid)) continue;
      auto& [bytes, holder] = counted[owner.pid];
      for (const auto& entry : owner.gpu_memory) bytes += entry.second;
      if (owner.heir) holder = "held by its heir, pid " + std::to_string(*owner.heir);
    }
    for (const Problem& problem : diagnosis.problems) {
      // A gone MPS client: its memory is the MPS server's to free (mps-leftover).
      if (problem.kind != "mps-leftover" || !problem.pid || !named_gone(*problem.pid)) continue;
      auto& [bytes, holder] = counted[*problem.pid];
      bytes += problem.bytes.value_or(0);
      holder = "held by the MPS server";
    }
    for (const auto& [pid, what] : counted) {
      io.err << "gpuclean: kill: pid " << pid << " is gone, but NVML still counts "
             << format_bytes(what.first) << " for it"
             << (what.second.empty() ? "" : " (" + what.second + ")") << "; see gpuclean explain "
             << pid << '\n';
    }
    // An Epilog's job whose processes all ended: the normal, clean case, said so.
    std::string owners;
    for (const std::string& job : selectors.owners.jobs) {
      owners += (owners.empty() ? "" : ", ") + ("Slurm job " + job);
    }
    for (const std::string& id : selectors.owners.containers) {
      owners += (owners.empty() ? "" : ", ") + ("container " + id);
    }
    io.err << "gpuclean: kill: nothing to kill"
           << (all_gone && plan.skipped.empty() ? ": already gone" : "")
           << (owners.empty() ? "" : " (no process of " + owners + " on this node)") << '\n';
    const int exit_code = !counted.empty()                                          ? kExitDirty
                          : plan.skipped.empty() && (selectors.broad() || all_gone) ? kExitClean
                                                                                    : kExitUsage;
    // --json: one document whenever the answer is not a usage error, an empty plan included.
    if (o.common.json && exit_code != kExitUsage) {
      if (o.dry_run) {
        nlohmann::json doc = output::document_header(host_name(), unix_now());
        doc["dry_run"] = true;
        doc["targets"] = nlohmann::json::array();
        doc["confirm_reasons"] = nlohmann::json::array();
        output::write_json(io.out, doc);
      } else {
        Verification left;
        left.nvml_after = nvml_state;
        for (const auto& [pid, what] : counted) {
          left.memory_left.push_back(
              fmt::format("{} still counted for gone pid {}", format_bytes(what.first), pid));
        }
        // Nothing was signalled: the selection is as the one look found it, holders included.
        for (const Problem& p : diagnosis.problems) {
          if (p.pid && counted.count(*p.pid) > 0) continue;  // in gpu_memory_left already
          note_other(left, p);
        }
        const diagnose::MemoryCheck memory = memory_check(nvml_state, left);
        print_json(plan, {}, left, verdict_after(0, left, memory),
                   not_verified_text(memory, nvml_state, nvml_message), 0.0, io);
      }
    }
    return exit_code;
  }

  const ops::TeardownOptions& t = parsed->teardown;
  if (!o.common.json) print_plan(plan, t, io);
  if (o.dry_run && !o.common.json) {
    // What acting on it would ask about (top shows this plan before its own y/N).
    for (const std::string& reason : plan.confirm_reasons) {
      io.err << "gpuclean: kill: would ask: " << output::escape_terminal(reason) << '\n';
    }
  }
  if (o.dry_run) {
    if (o.common.json) {
      nlohmann::json doc = output::document_header(host_name(), unix_now());
      doc["dry_run"] = true;
      doc["targets"] = nlohmann::json::array();
      for (const KillTarget& target : plan.targets) {
        doc["targets"].push_back(
            {{"pid", target.process.pid}, {"class", to_string(target.klass)}, {"why", target.why}});
      }
      doc["confirm_reasons"] = plan.confirm_reasons;
      output::write_json(io.out, doc);
    }
    return kExitClean;
  }
  if (!plan.confirm_reasons.empty() && !o.yes) {
    if (auto refused = unconfirmed(plan, io, interactive)) return *refused;
  }

  std::vector<ProcessInfo> planned;
  std::set<Pid> target_pids;
  std::set<Pid> listed_for_targets;  // PIDs NVML lists for the targets' memory
  for (const KillTarget& target : plan.targets) {
    planned.push_back(target.process);
    target_pids.insert(target.process.pid);
    if (target.gpu_memory.empty()) continue;
    listed_for_targets.insert(target.process.pid);
    if (target.inherited_from) listed_for_targets.insert(*target.inherited_from);
  }
  std::set<ops::PlannedMembers::Identity> existing;
  for (const auto& [pid, info] : table) existing.insert({pid, info.start_ticks});
  const ops::PlannedMembers members(std::move(planned), std::move(existing), selectors.tree,
                                    context.self, context.euid, context.privileged);

  // A live line on a terminal (stderr), cleared before the report.
  const bool live_line = ::isatty(STDERR_FILENO) != 0 && !o.common.json;
  auto progress = [&io, live_line](const std::string& line) {
    if (!live_line) return;
    // Cut to the terminal, the last column left empty: a wrapped live line scrolls.
    const auto width = static_cast<std::size_t>(output::terminal_columns(STDERR_FILENO, 80));
    io.err << "\r\x1b[2K" << output::cut_to_columns("gpuclean: kill: " + line, width - 1)
           << std::flush;
  };
  const auto started = Clock::now();
  const ops::RoundsOutcome rounds = ops::tear_down_rounds(*proc, members, t, {}, progress);
  if (!listed_for_targets.empty()) progress("verifying the GPU memory is released");
  const double kill_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  for (const ProcessInfo& p : rounds.found) target_pids.insert(p.pid);
  const Verification verification =
      verify(gatherer, listed_for_targets, target_pids, diagnose_options, started, t.wait,
             rounds.remaining() > 0);
  if (live_line) io.err << "\r\x1b[2K" << std::flush;

  const std::size_t remaining = rounds.remaining();
  const bool ok = remaining == 0 && verification.memory_left.empty();
  const std::vector<Met> met = met_processes(plan, rounds);
  // The targets may be gone, but whether their GPU memory came back is unknown when NVML
  // failed (a wedged driver): never "clean" then (docs/reference.md), and exit 3.
  const diagnose::MemoryCheck memory = memory_check(nvml_state, verification);
  const bool unverified = memory == diagnose::MemoryCheck::kFailed;
  const std::string failure = nvml_message.empty() ? verification.nvml_after_message : nvml_message;
  // The verdict speaks of the selection, holders that were not targets included; the exit
  // code of the targets (docs/reference.md "kill").
  const Verdict verdict = verdict_after(remaining, verification, memory);
  if (o.common.json) {
    print_json(plan, met, verification, verdict,
               not_verified_text(memory, nvml_state, unverified ? failure : nvml_message),
               kill_seconds, io);
  } else {
    print_text(met, verification, table, remaining, ok, memory, kill_seconds, io);
    if (unverified) {
      io.out << "gpuclean: kill: GPU memory not verified: NVML failed: "
             << output::escape_terminal(failure) << '\n';
    } else if (verdict == Verdict::kUnknown) {
      io.out << "gpuclean: kill: verdict unknown: the look after the kill could not read every "
                "process, and without NVML nothing else shows what they hold ("
             << output::escape_terminal(verification.unseen_message) << ")\n";
    }
  }
  if (!ok) return kExitDirty;
  return unverified ? kExitRuntime : kExitClean;
}

}  // namespace gpuclean::cli
