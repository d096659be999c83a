#include "cli/kill_command.h"
#include "cli/test_hooks.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "collect/gather.h"
#include "core/duration.h"
#include "core/units.h"
#include "diagnose/classify.h"
#include "diagnose/diagnosis.h"
#include "ops/signals.h"
#include "ops/teardown.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/who_view.h"
#include "procfs/process_table.h"

namespace gpuclean::cli {

using collect::Gathered;
using collect::Gatherer;
using collect::GatherError;
namespace {

using Clock = std::chrono::steady_clock;
using Table = procfs::ProcessTable;

struct Target {
  ProcessInfo process;
  HolderClass klass = HolderClass::kActive;
  std::map<unsigned, Bytes> gpu_memory;
  std::optional<Pid> inherited_from;
  std::string why;  // which selector chose it
};

struct Skip {
  Pid pid;
  std::string reason;
};

std::set<Pid> ancestors_of_self(const Table& table) {
  std::set<Pid> out;
  Pid pid = ::getpid();
  for (int depth = 0; depth < 4096 && pid > 0; ++depth) {
    auto it = table.find(pid);
    if (it == table.end()) break;
    pid = it->second.ppid;
    if (pid > 0) out.insert(pid);
  }
  return out;
}

int depth_of(const Table& table, Pid pid) {
  int depth = 0;
  for (auto it = table.find(pid); it != table.end() && depth < 4096; ++depth) {
    it = table.find(it->second.ppid);
  }
  return depth;
}

bool is_leftover(HolderClass klass) {
  return klass == HolderClass::kOrphan || klass == HolderClass::kHeir ||
         klass == HolderClass::kZombieLeader || klass == HolderClass::kStuck;
}

struct Parsed {
  ops::TeardownOptions teardown;
  std::optional<std::set<unsigned>> gpus;
};

std::optional<Parsed> parse_options(const KillOptions& o, const Io& io) {
  Parsed parsed;
  auto fail = [&io](const std::string& what) {
    io.err << "gpuclean: kill: " << what << '\n';
    return std::nullopt;
  };
  auto signal = ops::parse_signal(o.signal);
  if (!signal.ok()) return fail("--signal " + signal.error().message());
  auto grace = parse_duration(o.grace);
  if (!grace.ok()) return fail("--grace " + grace.error().message());
  auto wait = parse_duration(o.wait);
  if (!wait.ok()) return fail("--wait " + wait.error().message());
  parsed.teardown = {*signal, *grace, !o.no_kill9, *wait};
  if (!o.gpu.empty()) {
    parsed.gpus = std::set<unsigned>(o.gpu.begin(), o.gpu.end());
  } else {
    auto gpus = parse_gpu_list(o.common.gpus);
    if (!gpus.ok()) return fail(gpus.error().message());
    parsed.gpus = *gpus;
  }
  return parsed;
}

// One plan row; `depth` indents a target under a parent that is a target too (a tree).
std::string target_row(const Target& t, int depth) {
  const ProcessInfo& p = t.process;
  std::string memory = "-";
  Bytes total = 0;
  for (const auto& [gpu, bytes] : t.gpu_memory) total += bytes;
  if (total > 0) memory = format_bytes(total);
  return fmt::format("  {:>8}  {:<10} {:<5} {:<13} {:>9}  {}{}\n", p.pid,
                     output::escape_terminal(p.user), output::state_label(p), to_string(t.klass),
                     memory, std::string(static_cast<std::size_t>(depth) * 2, ' '),
                     output::command_label(p, 100));
}

}  // namespace

void add_kill_command(CLI::App& app, KillOptions& o) {
  CLI::App* kill = app.add_subcommand(
      "kill", "Tear down exactly the selected processes, escalate, and verify they are gone");
  add_common_options(*kill, o.common, HookScope::kAct);
  kill->add_option("pids", o.pids, "These processes and their descendants")
      ->check(CLI::PositiveNumber);
  kill->add_flag("--no-tree", o.no_tree, "Only the PIDs given, not their descendants");
  kill->add_option("--session", o.sessions, "Every process of session SID");
  kill->add_option("--pgid", o.pgids, "Every process of process group PGID");
  kill->add_flag("--holders", o.holders, "Every process holding the selected device files");
  kill->add_option("--gpu", o.gpu, "Holders on GPU N (short for --holders --gpus N)");
  kill->add_option("--user", o.users, "Every process of user U (name or uid)");
  kill->add_option("--cgroup", o.cgroups, "Every process in cgroup v2 PATH or below it");
  kill->add_flag("--leftovers", o.leftovers, "Holders classed orphan, heir, zombie-leader, stuck");
  kill->add_flag("-y,--yes", o.yes, "Act without asking (needed for selectors other than PIDs)");
  kill->add_flag("--dry-run", o.dry_run, "Print the plan and stop");
  kill->add_option("--signal", o.signal, "First signal (default TERM)");
  kill->add_option("--grace", o.grace, "Time between the signal and SIGKILL (default 5s)");
  kill->add_flag("--no-kill9", o.no_kill9, "Never escalate to SIGKILL");
  kill->add_option("--wait", o.wait, "How long to wait for the exits and the memory (default 30s)");
}

int run_kill(const KillOptions& o, const Io& io, bool interactive) {
  const auto parsed = parse_options(o, io);
  if (!parsed) return kExitUsage;
  const bool by_selector = o.holders || !o.gpu.empty() || o.leftovers || !o.sessions.empty() ||
                           !o.pgids.empty() || !o.users.empty() || !o.cgroups.empty();
  if (o.pids.empty() && !by_selector) {
    io.err << "gpuclean: kill: no target: give PIDs, or --holders, --gpu N, --leftovers, "
              "--session, --pgid, --user or --cgroup\n";
    return kExitUsage;
  }

  // One look at the machine: holders, classes and GPU memory, like `status`.
  CommonOptions common = o.common;
  auto opened = Gatherer::open(common);
  if (auto* error = std::get_if<GatherError>(&opened)) {
    io.err << "gpuclean: kill: " << error->message << '\n';
    return exit_code_of(*error);
  }
  Gatherer& gatherer = *std::get<std::unique_ptr<Gatherer>>(opened);
  Gathered gathered = gatherer.collect();
  const bool have_nvml = gathered.nvml_state == NvmlState::kPresent;
  if (parsed->gpus && !have_nvml) {
    io.err << "gpuclean: kill: selecting by GPU needs NVML (which GPU a process uses is known "
              "only from NVML's process lists), and NVML is "
           << to_string(gathered.nvml_state) << '\n';
    return kExitUsage;
  }
  diagnose::Options diagnose_options;
  diagnose_options.gpus = parsed->gpus;
  const Diagnosis diagnosis = diagnose::diagnose(std::move(gathered.input), diagnose_options);
  std::map<Pid, const Holder*> holder_of;
  for (const Holder& h : diagnosis.holders) {
    if (h.visible) holder_of[h.process.pid] = &h;
  }

  auto proc = procfs::ProcFs::open(o.common.proc_root);
  if (!proc.ok()) {
    io.err << "gpuclean: kill: " << proc.error().message() << '\n';
    return kExitRuntime;
  }
  const Table table = procfs::read_process_table(*proc);

  std::map<Pid, std::string> chosen;  // pid → why
  std::vector<Pid> not_found;
  for (Pid pid : o.pids) {
    if (table.count(pid) == 0) {
      not_found.push_back(pid);
      continue;
    }
    chosen.emplace(pid, "named");
    if (!o.no_tree) {
      for (Pid child : procfs::descendants(table, pid))
        chosen.emplace(child, fmt::format("descendant of {}", pid));
    }
  }
  for (const auto& [pid, info] : table) {
    for (Pid sid : o.sessions) {
      if (info.sid == sid) chosen.emplace(pid, fmt::format("session {}", sid));
    }
    for (Pid pgid : o.pgids) {
      if (info.pgid == pgid) chosen.emplace(pid, fmt::format("process group {}", pgid));
    }
    for (const std::string& user : o.users) {
      if (info.user == user || (info.uid && std::to_string(*info.uid) == user)) {
        chosen.emplace(pid, "user " + user);
      }
    }
    for (const std::string& cgroup : o.cgroups) {
      const std::string prefix =
          cgroup.size() > 1 && cgroup.back() == '/' ? cgroup.substr(0, cgroup.size() - 1) : cgroup;
      if (info.cgroup && (*info.cgroup == prefix || info.cgroup->rfind(prefix + "/", 0) == 0)) {
        chosen.emplace(pid, "cgroup " + cgroup);
      }
    }
  }
  for (const Holder& h : diagnosis.holders) {
    if (!h.visible || h.klass == HolderClass::kMonitor) continue;
    // With a GPU selection, only holders NVML attributes memory to on a selected GPU: every
    // CUDA process holds every GPU's device file (FACTS.md), so the files cannot decide.
    const bool on_selected_gpu =
        !parsed->gpus ||
        std::any_of(h.gpu_memory.begin(), h.gpu_memory.end(),
                    [&](const auto& entry) { return parsed->gpus->count(entry.first) > 0; });
    if ((o.holders || !o.gpu.empty()) && on_selected_gpu) chosen.emplace(h.process.pid, "holder");
    if (o.leftovers && is_leftover(h.klass) && on_selected_gpu) {
      chosen.emplace(h.process.pid, std::string("leftover (") + to_string(h.klass) + ")");
    }
  }

  // Protections (SPEC.md safety rules): what is never a target, and why.
  const std::set<Pid> ancestors = ancestors_of_self(table);
  const bool root = ::geteuid() == 0;
  std::vector<Target> targets;
  std::vector<Skip> skipped;
  for (const auto& [pid, why] : chosen) {
    const ProcessInfo& info = table.at(pid);
    const Holder* holder = holder_of.count(pid) > 0 ? holder_of.at(pid) : nullptr;
    if (pid == 1) {
      skipped.push_back({pid, "PID 1 (init) is never a target"});
    } else if (pid == ::getpid()) {
      skipped.push_back({pid, "gpuclean itself"});
    } else if (ancestors.count(pid) > 0) {
      skipped.push_back({pid, "an ancestor of gpuclean (the shell or program that started it)"});
    } else if (info.kernel_thread) {
      skipped.push_back({pid, "a kernel thread"});
    } else if (holder != nullptr && holder->klass == HolderClass::kMonitor) {
      skipped.push_back({pid, "a monitor (control files only, no GPU context)"});
    } else if (!root && info.uid && *info.uid != ::geteuid()) {
      skipped.push_back(
          {pid, "owned by " + info.user + ": not permitted (run as " +
                    (info.uid == Uid{0} ? std::string("root") : "root or as " + info.user) + ")"});
    } else {
      Target t;
      t.process = info;
      t.klass = holder != nullptr ? holder->klass : diagnose::classify_from_proc(info);
      if (holder != nullptr) {
        t.gpu_memory = holder->gpu_memory;
        t.inherited_from = holder->inherited_from;
      }
      t.why = why;
      targets.push_back(std::move(t));
    }
  }
  std::sort(targets.begin(), targets.end(), [&table](const Target& a, const Target& b) {
    const int da = depth_of(table, a.process.pid);
    const int db = depth_of(table, b.process.pid);
    return da != db ? da < db : a.process.pid < b.process.pid;  // parents first
  });

  for (Pid pid : not_found) io.err << "gpuclean: kill: no such process: " << pid << '\n';
  for (const Skip& s : skipped) {
    io.err << "gpuclean: kill: not touching pid " << s.pid << ": " << s.reason << '\n';
  }
  if (targets.empty()) {
    io.err << "gpuclean: kill: nothing to kill\n";
    return not_found.empty() && skipped.empty() && by_selector ? kExitClean : kExitUsage;
  }

  const auto& t = parsed->teardown;
  const std::string steps =
      t.signal == 9
          ? "KILL"
          : fmt::format("STOP, {}+CONT{}", ops::signal_name(t.signal),
                        t.kill9 ? fmt::format(", KILL after {} ms", t.grace.count()) : "");
  if (!o.common.json) {
    io.out << fmt::format("Plan: {} process{} ({}; wait up to {} ms)\n", targets.size(),
                          targets.size() == 1 ? "" : "es", steps, t.wait.count());
    io.out << fmt::format("  {:>8}  {:<10} {:<5} {:<13} {:>9}  {}\n", "PID", "USER", "STATE",
                          "CLASS", "MEMORY", "COMMAND");
    // Targets are sorted parents first, so a parent's depth is known before its children's.
    std::map<Pid, int> depth;
    for (const Target& target : targets) {
      auto parent = depth.find(target.process.ppid);
      depth[target.process.pid] = parent == depth.end() ? 0 : parent->second + 1;
      io.out << target_row(target, depth[target.process.pid]);
    }
    io.out << std::flush;
  }
  if (o.dry_run) {
    if (o.common.json) {
      nlohmann::json doc = output::document_header(host_name(), unix_now());
      doc["dry_run"] = true;
      doc["targets"] = nlohmann::json::array();
      for (const Target& target : targets) {
        doc["targets"].push_back(
            {{"pid", target.process.pid}, {"class", to_string(target.klass)}, {"why", target.why}});
      }
      output::write_json(io.out, doc);
    }
    return kExitClean;
  }
  if (by_selector && !o.yes) {
    if (!interactive) {
      io.err << "gpuclean: kill: add --yes to act on this plan (selectors other than explicit "
                "PIDs need a confirmation)\n";
      return kExitUsage;
    }
    io.err << "Kill these " << targets.size() << " processes? [y/N] " << std::flush;
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      io.err << "gpuclean: kill: not confirmed; nothing was signalled\n";
      return kExitUsage;
    }
  }

  std::vector<ProcessInfo> processes;
  processes.reserve(targets.size());
  for (const Target& target : targets) processes.push_back(target.process);
  const auto started = Clock::now();
  std::set<Pid> listed_for_targets;
  for (const Target& target : targets) {
    if (target.gpu_memory.empty()) continue;
    listed_for_targets.insert(target.process.pid);
    if (target.inherited_from) listed_for_targets.insert(*target.inherited_from);
  }
  // A live line on a terminal (stderr), cleared before the report.
  const bool live_line = ::isatty(STDERR_FILENO) != 0 && !o.common.json;
  auto progress = [&io, live_line](const std::string& line) {
    if (live_line) io.err << "\r\x1b[2Kgpuclean: kill: " << line << std::flush;
  };
  const std::vector<ops::TargetOutcome> outcomes = ops::tear_down(*proc, processes, t, progress);
  if (!listed_for_targets.empty()) progress("verifying the GPU memory is released");
  const double kill_seconds = std::chrono::duration<double>(Clock::now() - started).count();

  // Verification of the GPU side: NVML must stop listing the targets (and the dead owners
  // their memory came from), bounded by --wait.
  std::optional<double> memory_back_seconds;
  std::vector<std::string> memory_left;
  std::vector<std::string> still_held;
  const auto verify_deadline = Clock::now() + t.wait;
  while (true) {
    Gathered after = gatherer.collect();
    memory_left.clear();
    if (after.input.gpu_view) {
      for (const Gpu& gpu : after.input.gpu_view->gpus) {
        for (const GpuProcess& p : gpu.processes) {
          if (listed_for_targets.count(p.pid) > 0) {
            memory_left.push_back(fmt::format("GPU {}: {} still listed for pid {}", gpu.index,
                                              format_bytes(p.used_memory.value_or(0)), p.pid));
          }
        }
      }
    }
    if (memory_left.empty() || Clock::now() >= verify_deadline) {
      if (memory_left.empty() && !listed_for_targets.empty()) {
        memory_back_seconds = std::chrono::duration<double>(Clock::now() - started).count();
      }
      std::set<Pid> target_pids;
      for (const Target& target : targets) target_pids.insert(target.process.pid);
      const Diagnosis now = diagnose::diagnose(std::move(after.input), diagnose_options);
      for (const Problem& p : now.problems) {
        if (!p.pid || target_pids.count(*p.pid) == 0) still_held.push_back(p.message);
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  if (live_line) io.err << "\r\x1b[2K" << std::flush;
  std::size_t remaining = 0;
  for (const auto& outcome : outcomes) {
    if (outcome.state != ops::TargetOutcome::State::kGone) ++remaining;
  }
  const bool ok = remaining == 0 && memory_left.empty();

  if (o.common.json) {
    nlohmann::json doc = output::document_header(host_name(), unix_now());
    doc["verdict"] = ok ? "clean" : "dirty";
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      const auto& outcome = outcomes[i];
      nlohmann::json threads = nlohmann::json::array();
      for (const ThreadInfo& th : outcome.threads) {
        threads.push_back(
            {{"tid", th.tid}, {"state", std::string(1, th.state)}, {"wchan", th.wchan}});
      }
      list.push_back(
          {{"pid", outcome.pid},
           {"class", to_string(targets[i].klass)},
           {"why", targets[i].why},
           {"comm", targets[i].process.comm},
           {"outcome", outcome.state == ops::TargetOutcome::State::kGone        ? "gone"
                       : outcome.state == ops::TargetOutcome::State::kRemaining ? "remaining"
                                                                                : "skipped"},
           {"signals", outcome.signals},
           {"reason", outcome.reason},
           {"seconds", outcome.seconds},
           {"threads", threads}});
    }
    doc["targets"] = list;
    nlohmann::json skips = nlohmann::json::array();
    for (const Skip& s : skipped) skips.push_back({{"pid", s.pid}, {"reason", s.reason}});
    doc["skipped"] = skips;
    doc["not_found"] = not_found;
    doc["gpu_memory_left"] = memory_left;
    doc["memory_back_seconds"] =
        memory_back_seconds ? nlohmann::json(*memory_back_seconds) : nlohmann::json();
    doc["still_held_by"] = still_held;
    doc["seconds"] = kill_seconds;
    output::write_json(io.out, doc);
  } else {
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      const auto& outcome = outcomes[i];
      const std::string name = output::escape_terminal(targets[i].process.comm);
      const std::string sent = fmt::format("{}", fmt::join(outcome.signals, ","));
      if (outcome.state == ops::TargetOutcome::State::kGone && targets[i].process.state == 'Z' &&
          targets[i].klass == HolderClass::kZombie) {
        // It had exited before the plan: signals cannot remove a zombie, only its parent's
        // wait() can, and it holds no GPU memory (SPEC.md problem 7).
        const auto parent = table.find(targets[i].process.ppid);
        io.out << fmt::format(
            "  zombie   {:>8} ({}) had already exited; parent {} ({}) has not reaped it: harmless "
            "to the GPU\n",
            outcome.pid, name, targets[i].process.ppid,
            parent == table.end() ? "?" : output::escape_terminal(parent->second.comm));
      } else if (outcome.state == ops::TargetOutcome::State::kGone) {
        io.out << fmt::format("  gone     {:>8} ({}) after {} in {:.2f} s\n", outcome.pid, name,
                              sent.empty() ? "nothing" : sent, outcome.seconds);
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
    for (const std::string& line : memory_left) io.out << "  memory   " << line << '\n';
    if (memory_back_seconds) {
      io.out << fmt::format("  GPU memory of the targets released ({:.2f} s)\n",
                            *memory_back_seconds);
    }
    for (const std::string& line : still_held)
      io.out << "  still held by others: " << output::escape_terminal(line) << '\n';
    if (ok) {
      io.out << fmt::format("gpuclean: kill: all {} target{} gone ({:.2f} s)\n", targets.size(),
                            targets.size() == 1 ? "" : "s", kill_seconds);
    } else {
      io.out << fmt::format("gpuclean: kill: {} of {} targets remain{}\n", remaining,
                            targets.size(), memory_left.empty() ? "" : "; GPU memory not released");
    }
  }
  return ok ? kExitClean : kExitDirty;
}

}  // namespace gpuclean::cli
