#include "cli/kill_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <set>
#include <variant>

#include <fmt/format.h>

#include "cli/usage_error.h"
#include "collect/activity_look.h"
#include "collect/gather.h"
#include "collect/kill_look.h"
#include "core/diagnostics.h"
#include "core/duration.h"
#include "core/kill_model.h"
#include "core/units.h"
#include "diagnose/diagnosis.h"
#include "diagnose/gpu_count.h"
#include "diagnose/kill_check.h"
#include "diagnose/kill_plan.h"
#include "diagnose/verdict.h"
#include "ops/cgroup.h"
#include "ops/signals.h"
#include "ops/teardown.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/kill_view.h"
#include "output/text_width.h"
#include "procfs/capabilities.h"
#include "procfs/process_table.h"
#include "procfs/user_names.h"
#include "recorder/action_socket.h"
#include "recorder/proc_events.h"

namespace gpuclean::cli {
namespace {

// kill always works on the kernel's own view: no test root ever reaches it (docs/reference.md).
constexpr const char* kRealProc = "/proc";

struct Parsed {
  ops::TeardownOptions teardown;
  diagnose::KillSelectors selectors;
};

// A GPU selection narrows holders; with PIDs, sessions, users, … it would silently select
// nothing less: say so instead.
std::optional<std::string> gpu_selection_error(const KillOptions& o,
                                               const diagnose::KillSelectors& s) {
  if (!s.gpus || s.holders || s.leftovers) return std::nullopt;
  // `kill --gpus 2` alone: --gpu 2 was meant.
  const bool alone = s.pids.empty() && s.sessions.empty() && s.pgids.empty() && o.users.empty() &&
                     o.cgroups.empty() && o.jobs.empty() && o.containers.empty();
  if (!alone) {
    return "--gpus narrows --holders and --leftovers only (which GPU a process uses is known "
           "only for holders)";
  }
  const std::string& list = o.common.gpus;
  return "--gpus " + list + " only narrows other selectors; to end the holders of " +
         (s.gpus->size() == 1 ? "GPU " + list + " use --gpu " + list + " (or "
                              : "GPUs " + list + " use (") +
         "--holders --gpus " + list + ")";
}

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
  auto pids = parse_pid_selectors(o.pids);
  if (!pids.ok()) return fail(pids.error().context);
  s.pids = std::move(pids->pids);
  s.start_ticks = std::move(pids->start_ticks);
  s.tree = !o.no_tree;
  s.sessions = o.sessions;
  s.pgids = o.pgids;
  s.holders = o.holders || !o.gpu.empty();
  s.leftovers = o.leftovers;
  s.include_busy = o.include_busy;
  auto gpus = parse_gpu_list(o.common.gpus);
  if (!gpus.ok()) return fail(gpus.error().message());
  if (!o.gpu.empty()) {
    if (gpus->has_value()) return fail("give either --gpu N or --gpus LIST, not both");
    s.gpus = std::set<unsigned>(o.gpu.begin(), o.gpu.end());
  } else {
    s.gpus = *gpus;
  }
  if (auto wrong = gpu_selection_error(o, s)) return fail(*wrong);
  for (const std::string& user : o.users) {
    auto uid = procfs::uid_of_user(user);
    if (!uid.ok()) return fail("--user: no user named '" + user + "'");
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

// Asks for the plan's confirmation: nullopt to go on, or the exit code. Without a terminal the
// missing --yes is a usage error (2); a "no" at the prompt is nothing done (1).
std::optional<int> unconfirmed(const KillPlan& plan, const Io& io, bool interactive) {
  if (!interactive) {
    say(io.err, "kill") << "add --yes to act on this plan (";
    for (std::size_t i = 0; i < plan.confirm_reasons.size(); ++i) {
      io.err << (i > 0 ? "; " : "") << output::escape_terminal(plan.confirm_reasons[i]);
    }
    io.err << ")\n";
    return kExitUsage;
  }
  for (const std::string& reason : plan.confirm_reasons) {
    say(io.err, "kill") << output::escape_terminal(reason) << '\n';
  }
  const std::size_t count = plan.targets.size();
  io.err << "Kill " << count << (count == 1 ? " process" : " processes") << "? [y/N] "
         << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  if (answer == "y" || answer == "Y" || answer == "yes") return std::nullopt;
  say(io.err, "kill") << "not confirmed; nothing was signalled\n";
  return kExitDirty;
}

// The one look kill takes before it plans (holders, classes and GPU memory, like `status`),
// and the gatherer it keeps for the looks after the teardown.
struct LookBefore {
  std::unique_ptr<collect::Gatherer> gatherer;
  Diagnosis diagnosis;
  diagnose::Options diagnose_options;
  NvmlState nvml_state = NvmlState::kDisabled;
  std::string nvml_message;
  bool drm_gpus = false;  // AMD or Intel GPUs: their memory comes from the kernel, NVML or not
  // What was gathered, kept where a leftover's activity may decide the plan (--leftovers
  // without --include-busy): diagnosed again after a second look (settle_leftover_activity).
  std::optional<collect::Gathered> gathered;
};

// The look, or the exit code when it cannot be taken or the GPU selection is wrong.
std::variant<LookBefore, int> look_before(const KillOptions& o,
                                          const diagnose::KillSelectors& selectors, const Io& io) {
  CommonOptions common = o.common;
  common.proc_root = kRealProc;
  LookBefore look;
  if (auto failed = open_gatherer(common, io, look.gatherer, "kill")) return *failed;
  look.gatherer->start_nvml_helper();  // a wedged driver must not keep kill from signalling
  collect::Gathered gathered = look.gatherer->collect();
  look.nvml_state = gathered.nvml_state;
  look.nvml_message = gathered.nvml_message;
  if (look.nvml_state == NvmlState::kFailed) {
    // Not asked again: the targets are signalled and reported without another wait on it.
    nvml::OpenedSource failed;
    failed.state = nvml::OpenedSource::State::kFailed;
    failed.message = look.nvml_message;
    look.gatherer->use_gpu_source(std::move(failed));
  }
  look.drm_gpus = diagnose::has_drm_gpus(gathered.input.gpu_view);
  if (selectors.gpus) {
    // NVML failing is a runtime failure (exit 3); NVML off or absent on a machine without AMD
    // or Intel GPUs makes the selection a usage error.
    if (!diagnose::gpu_selection_known(look.nvml_state, gathered.input.gpu_view)) {
      say(io.err, "kill") << "selecting by GPU needs NVML (which GPU a process uses is known "
                             "only from NVML's process lists), and NVML is "
                          << to_string(look.nvml_state)
                          << (look.nvml_message.empty() ? "" : ": " + look.nvml_message) << '\n';
      return look.nvml_state == NvmlState::kFailed ? kExitRuntime : kExitUsage;
    }
    if (auto unknown = diagnose::unknown_gpu(*selectors.gpus, *gathered.input.gpu_view)) {
      say(io.err, "kill") << *unknown << '\n';
      return kExitUsage;
    }
  }
  look.diagnose_options.gpus = selectors.gpus;
  if (selectors.leftovers && !selectors.holders && !selectors.include_busy)
    look.gathered = gathered;
  look.diagnosis = diagnose::diagnose(std::move(gathered.input), look.diagnose_options);
  return look;
}

// One busy sample is not "still computing" (diagnose/activity.h): where a leftover tree the
// plan would judge shows one, look at the GPUs again and diagnose again with what they show.
bool settle_leftover_activity(LookBefore& before, const ProcessTable& table,
                              const diagnose::KillSelectors& selectors,
                              const diagnose::KillContext& context, const Io& io, bool live_line) {
  if (!before.gathered) return false;
  const auto who =
      diagnose::leftover_activity_to_settle(table, before.diagnosis.holders, selectors, context);
  if (who.empty()) return false;
  if (live_line) {
    io.err << "\r\x1b[2Kgpuclean: kill: " << who.size()
           << (who.size() == 1 ? " leftover shows" : " leftovers show")
           << " GPU activity in one sample: looking again (a last kernel is no work in progress)"
           << std::flush;
  }
  const bool looked = collect::settle_activity(*before.gatherer, *before.gathered, who);
  if (live_line) io.err << "\r\x1b[2K" << std::flush;
  if (looked) {
    before.diagnosis =
        diagnose::diagnose(std::move(before.gathered->input), before.diagnose_options);
  }
  before.gathered.reset();
  return looked;
}

// Says on stderr what the plan refused, did not find and skips. An exit code when it refused:
// a protected PID named makes the whole plan a usage error.
std::optional<int> say_plan_exceptions(const KillPlan& plan, const ProcessTable& table,
                                       const diagnose::KillSelectors& selectors, const Io& io) {
  for (const auto& r : plan.refused) {
    say(io.err, "kill") << "refusing pid " << r.pid << ": " << r.reason
                        << "; nothing is planned (its descendants are not implied: name them)\n";
  }
  if (!plan.refused.empty()) return kExitUsage;
  for (Pid pid : plan.not_found) {
    const auto now = table.find(pid);
    if (now == table.end()) {
      say(io.err, "kill") << "no such process: " << pid << '\n';
      continue;
    }
    // PID@START and the PID is another process now: the one named is gone.
    say(io.err, "kill") << fmt::format(
        "pid {} is no longer the process given (that one started at tick {}; "
        "pid {} now started at tick {}): it is gone, and the new one is not touched\n",
        pid, selectors.start_ticks.at(pid), pid, now->second.start_ticks);
  }
  for (const std::string& line : output::skipped_lines(plan.skipped)) {
    say(io.err, "kill") << line << '\n';
  }
  return std::nullopt;
}

// "Slurm job 42, container 3f2a…": the owners selected, for "nothing to kill".
std::string owners_text(const diagnose::OwnerSelector& owners) {
  std::string text;
  for (const std::string& job : owners.jobs)
    text += (text.empty() ? "" : ", ") + ("Slurm job " + job);
  for (const std::string& id : owners.containers) {
    text += (text.empty() ? "" : ", ") + ("container " + id);
  }
  return text;
}

// Named PIDs (without @START) that were not there when kill looked: nothing to end, and not
// what the caller meant (a typo, a stale PID file): exit 1.
std::size_t never_seen(const KillPlan& plan, const diagnose::KillSelectors& selectors) {
  return static_cast<std::size_t>(
      std::count_if(plan.not_found.begin(), plan.not_found.end(),
                    [&](Pid pid) { return selectors.start_ticks.count(pid) == 0; }));
}

// An empty plan. A process named as PID@START already gone is what the caller wanted (an
// Epilog racing a job's own exit must not drain the node for it); a plain PID that is not there
// was never seen, and a skipped one is not gone: both exit 1. Gone is not yet clean: memory
// NVML still counts for a named PID (being released, or held by an heir) is reported, and
// makes it dirty. --json always prints one document.
int report_nothing_to_kill(const KillOptions& o, const KillDryRun& dry_run,
                           const diagnose::KillSelectors& selectors, const LookBefore& before,
                           const Io& io) {
  const KillPlan& plan = dry_run.plan;
  const std::size_t unknown = never_seen(plan, selectors);
  const bool all_gone =
      !plan.not_found.empty() && unknown == 0 && plan.not_found.size() == selectors.pids.size();
  const auto counted = diagnose::gone_but_counted(plan.not_found, before.diagnosis);
  for (const auto& gone : counted) {
    say(io.err, "kill") << "pid " << gone.pid << " is gone, but NVML still counts "
                        << format_bytes(gone.bytes) << " for it"
                        << (gone.held_by.empty() ? "" : " (" + gone.held_by + ")")
                        << "; see gpuclean explain " << gone.pid << '\n';
  }
  // An Epilog's job whose processes all ended: the normal, clean case, said so.
  const std::string owners = owners_text(selectors.owners);
  say(io.err, "kill") << "nothing to kill"
                      << (all_gone && plan.skipped.empty() ? ": already gone" : "")
                      << (owners.empty() ? "" : " (no process of " + owners + " on this node)")
                      << '\n';
  KillReport report;
  report.host = host_name();
  report.time = unix_now();
  report.skipped = plan.skipped;
  report.not_found = plan.not_found;
  report.leftovers = selectors.leftovers;
  report.never_seen = unknown;
  // Skipped: selected, and still there (unless it has gone since the scan).
  report.remaining = static_cast<std::size_t>(std::count_if(
      plan.skipped.begin(), plan.skipped.end(), [](const KillSkip& k) { return !k.gone; }));
  std::set<Pid> counted_pids;
  for (const auto& gone : counted) {
    counted_pids.insert(gone.pid);
    report.left.memory.push_back(
        fmt::format("{} still counted for gone pid {}", format_bytes(gone.bytes), gone.pid));
  }
  // Nothing was signalled: the selection is as the one look found it, holders included.
  for (const Problem& p : before.diagnosis.problems) {
    if (p.pid && counted_pids.count(*p.pid) > 0) continue;  // in gpu_memory_left already
    diagnose::add_other(p, report.left);
  }
  report.memory =
      diagnose::memory_check(before.nvml_state, true, before.nvml_state, before.drm_gpus);
  report.verdict = diagnose::kill_verdict({.targets_left = 0,
                                           .memory_left = report.left.memory.size(),
                                           .others_left = report.left.still_held.size(),
                                           .memory = report.memory,
                                           .unseen = false});
  report.gpu_not_verified =
      output::not_verified_text(report.memory, before.nvml_state, before.nvml_message);
  const int exit_code = diagnose::kill_exit_code(report, false);
  if (!o.common.json) return exit_code;
  if (o.dry_run) {
    output::write_json(io.out, output::kill_dry_run_json(dry_run, host_name(), unix_now()));
  } else {
    output::write_json(io.out, output::kill_report_json(report));
  }
  return exit_code;
}

KillSteps steps_of(const ops::TeardownOptions& t) {
  return {.signal = t.signal,
          .signal_name = ops::signal_name(t.signal),
          .kill9 = t.kill9,
          .grace_ms = static_cast<long long>(t.grace.count()),
          .wait_ms = static_cast<long long>(t.wait.count())};
}

// A live line on a terminal (stderr) while the teardown runs; cleared before the report (or,
// on an early return, when it goes), once, and only when something was shown.
class LiveLine {
 public:
  LiveLine(const Io& io, bool on) : io_(io), on_(on) {}
  LiveLine(const LiveLine&) = delete;
  LiveLine& operator=(const LiveLine&) = delete;
  LiveLine(LiveLine&&) = delete;
  LiveLine& operator=(LiveLine&&) = delete;
  ~LiveLine() { clear(); }
  void show(const std::string& line) {
    if (!on_) return;
    // Cut to the terminal, the last column left empty: a wrapped live line scrolls.
    const auto width = static_cast<std::size_t>(terminal_columns(STDERR_FILENO, 80));
    io_.err << "\r\x1b[2K" << output::cut_to_columns(said(line, "kill"), width - 1) << std::flush;
    shown_ = true;
  }
  void clear() {
    if (shown_) io_.err << "\r\x1b[2K" << std::flush;
    shown_ = false;
  }

 private:
  const Io& io_;
  bool on_;
  bool shown_ = false;
};

// The groups of `gpuclean run`s whose gpuclean was killed, emptied by this kill: removed, and
// said on stderr (ops::remove_run_groups).
void remove_run_groups(const KillPlan& plan, const ops::RoundsOutcome& rounds, const Io& io) {
  std::vector<ProcessInfo> ended = rounds.found;
  for (const KillTarget& target : plan.targets) ended.push_back(target.process);
  for (const std::string& line : ops::remove_run_groups(kRealProc, ended)) {
    say(io.err, "kill") << line << '\n';
  }
}

// Tears the plan down, looks after it, and reports. The exit code is the targets'
// (docs/reference.md "kill"); the verdict speaks of the selection.
// Prints the report, tells the flight recorder (if one listens; never waited on) and returns
// kill's exit code.
int report_kill(const KillOptions& o, const KillReport& report, bool unverified, const Io& io) {
  if (o.common.json) {
    output::write_json(io.out, output::kill_report_json(report));
  } else {
    output::render_kill_report_text(io.out, report);
  }
  const int exit_code = diagnose::kill_exit_code(report, unverified);
  recorder::send_action(recorder::action_socket_path(),
                        output::kill_action_json(report, o.args, exit_code)
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return exit_code;
}

// The kernel's process events while the teardown runs, where kill follows what its targets fork
// (the tree) and may subscribe (root): a child a target forks and leaves behind — its parent
// exited at once, and it left the process group with setsid — is still the target's, by the
// fork the kernel reported (issue 47: a dead job is ended whole). nullptr where they cannot be
// had; the teardown then follows lineage and process groups from /proc alone, as before.
std::unique_ptr<recorder::ProcEvents> watch_forks(const std::vector<ProcessInfo>& planned,
                                                  bool follow_children) {
  if (!follow_children || planned.empty()) return nullptr;
  auto started = recorder::ProcEvents::start(kRealProc);
  if (!started.ok()) return nullptr;
  for (const ProcessInfo& target : planned) (*started)->know(target);
  return std::move(started).value();
}

// Bounded: a look waits at most this long for the forks reported before it.
constexpr std::chrono::milliseconds kForksCatchUp{100};

ops::PlannedMembers::ForkEvents fork_events(const recorder::ProcEvents* events) {
  if (events == nullptr) return {};
  return {[events](Pid pid, std::uint64_t start) -> std::optional<ops::PlannedMembers::Forker> {
            const auto parent = events->parent_of(pid, start);
            if (!parent) return std::nullopt;
            return ops::PlannedMembers::Forker{parent->pid, parent->start_ticks};
          },
          [events] { (void)events->catch_up(kForksCatchUp); }};
}

int act_on(const KillOptions& o, const Parsed& parsed, const KillPlan& plan,
           const ProcessTable& table, const diagnose::KillContext& context, LookBefore& before,
           const Io& io) {
  std::vector<ProcessInfo> planned;
  collect::KillLookRequest request;
  for (const KillTarget& target : plan.targets) {
    planned.push_back(target.process);
    request.ours.insert(target.process.pid);
    if (target.gpu_memory.empty()) continue;
    request.listed.insert(target.process.pid);
    if (target.inherited_from) request.listed.insert(*target.inherited_from);
  }
  std::set<ops::PlannedMembers::Identity> existing;
  for (const auto& [pid, info] : table) existing.insert({pid, info.start_ticks});
  const auto events = watch_forks(planned, parsed.selectors.tree);
  const ops::PlannedMembers members(std::move(planned), std::move(existing), parsed.selectors.tree,
                                    context.self, context.euid, context.privileged,
                                    fork_events(events.get()));
  const ops::TeardownOptions& t = parsed.teardown;
  LiveLine live(io, ::isatty(STDERR_FILENO) != 0 && !o.common.json);
  request.started = std::chrono::steady_clock::now();
  const ops::RoundsOutcome rounds = ops::tear_down_rounds(
      before.gatherer->proc(), members, t, {}, [&live](const std::string& l) { live.show(l); });
  if (!request.listed.empty()) live.show("verifying the GPU memory is released");
  KillReport report;
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - request.started).count();
  for (const ProcessInfo& p : rounds.found) request.ours.insert(p.pid);
  request.ours.insert(request.listed.begin(), request.listed.end());
  request.wait = t.wait;
  request.survivors = rounds.remaining() > 0;
  request.diagnose_options = before.diagnose_options;
  collect::KillLook look = collect::look_after_kill(*before.gatherer, request);
  live.clear();
  remove_run_groups(plan, rounds, io);

  report.host = host_name();
  report.time = unix_now();
  report.met = diagnose::met_processes(plan, rounds.found, rounds.outcomes, table);
  report.skipped = plan.skipped;
  report.not_found = plan.not_found;
  report.leftovers = parsed.selectors.leftovers;
  report.never_seen = never_seen(plan, parsed.selectors);
  report.remaining = rounds.remaining();
  report.left = std::move(look.left);
  // The targets may be gone, but whether their GPU memory came back is unknown when NVML
  // failed (a wedged driver): never "clean" then (docs/reference.md), and exit 3.
  report.memory =
      diagnose::memory_check(before.nvml_state, look.answered, look.nvml_after, before.drm_gpus);
  const bool unverified = report.memory == MemoryCheck::kFailed;
  const std::string& failure =
      before.nvml_message.empty() ? look.nvml_after_message : before.nvml_message;
  report.gpu_not_verified = output::not_verified_text(report.memory, before.nvml_state,
                                                      unverified ? failure : before.nvml_message);
  report.verdict = diagnose::kill_verdict({.targets_left = report.remaining,
                                           .memory_left = report.left.memory.size(),
                                           .others_left = report.left.still_held.size(),
                                           .memory = report.memory,
                                           .unseen = look.unseen_decides});
  return report_kill(o, report, unverified, io);
}

}  // namespace

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
  auto looked = look_before(o, selectors, io);
  if (const int* exit_code = std::get_if<int>(&looked)) return *exit_code;
  LookBefore& before = std::get<LookBefore>(looked);

  // The gatherer's /proc: a process whose memory map it found locked is not waited on again.
  ProcessTable table = procfs::read_process_table(before.gatherer->proc());
  if (auto ambiguous = ambiguous_container(table, selectors.owners)) {
    io.err << usage_message("kill", *ambiguous);
    return kExitUsage;
  }
  // CAP_KILL, not uid 0: a root without it is refused other users' processes.
  const diagnose::KillContext context{::getpid(), ::geteuid(), procfs::may_signal_every_process()};
  if (settle_leftover_activity(before, table, selectors, context, io,
                               ::isatty(STDERR_FILENO) != 0 && !o.common.json)) {
    table = procfs::read_process_table(before.gatherer->proc());  // seconds later: as it is now
  }
  const KillPlan plan = diagnose::plan_kill(table, before.diagnosis.holders, selectors, context,
                                            before.diagnosis.dead_owners);
  if (auto refused = say_plan_exceptions(plan, table, selectors, io)) return *refused;
  const KillDryRun dry_run{plan, steps_of(parsed->teardown)};
  if (plan.targets.empty()) return report_nothing_to_kill(o, dry_run, selectors, before, io);

  if (o.common.json && o.dry_run) {
    output::write_json(io.out, output::kill_dry_run_json(dry_run, host_name(), unix_now()));
    return kExitClean;
  }
  if (!o.common.json) {
    output::render_kill_plan_text(
        io.out, plan, dry_run.steps,
        static_cast<std::size_t>(terminal_columns(STDOUT_FILENO, output::kNoWidthLimit)));
  }
  if (o.dry_run) {
    // What acting on it would ask about (top shows this plan before its own y/N).
    for (const std::string& reason : plan.confirm_reasons) {
      say(io.err, "kill") << "would ask: " << output::escape_terminal(reason) << '\n';
    }
    // Whatever selected the plan (PIDs, --leftovers, --holders): its last line says so.
    say(io.err, "kill") << "dry run: nothing was signalled\n";
    return kExitClean;
  }
  if (!plan.confirm_reasons.empty() && !o.yes) {
    if (auto refused = unconfirmed(plan, io, interactive)) return *refused;
  }
  return act_on(o, *parsed, plan, table, context, before, io);
}

}  // namespace gpuclean::cli
