#include "output/explain_view.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/duration.h"
#include "core/units.h"
#include "core/wall_time.h"
#include "output/escape.h"
#include "output/history_view.h"
#include "output/json.h"
#include "output/owner_text.h"
#include "output/who_view.h"

namespace gpuclean::output {
namespace {

void row(std::ostream& out, const char* label, const std::string& text) {
  out << fmt::format("  {:<9} {}\n", label, text);
}

std::string state_meaning(const ProcessInfo& p, HolderClass klass) {
  switch (klass) {
    case HolderClass::kZombieLeader:
      return "its main thread exited (zombie leader) while other threads live on and keep its "
             "files; /proc/PID/fd is empty, so fuser and lsof do not see it";
    case HolderClass::kZombie:
      return "a plain zombie: it has exited and holds no GPU memory and no files; only its exit "
             "status waits for the parent to collect it";
    case HolderClass::kStuck:
      if (p.memory_map_locked) {
        return "its memory map is locked (a thread is stuck; see its wait channels): reading "
               "its command line did not answer, and SIGKILL takes effect only when the stuck "
               "wait ends";
      }
      return "a thread stayed in uninterruptible sleep (D) across a re-check: signals, SIGKILL "
             "included, wait until it returns from the kernel";
    case HolderClass::kFrozen:
      if (p.frozen) {
        return "frozen: its cgroup " + escape_terminal(p.frozen->directory) +
               " is frozen, and it runs again only when thawed (" +
               escape_terminal(thaw_command(*p.frozen)) + "); gpuclean never thaws on its own";
      }
      return "frozen: its cgroup is frozen";
    default:
      return fmt::format("{} ({})", state_label(p),
                         p.state == 'R'   ? "running"
                         : p.state == 'S' ? "sleeping"
                         : p.state == 'T' ? "stopped"
                         : p.state == 'D' ? "uninterruptible"
                                          : "see ps(1)");
  }
}

std::string parent_text(const ProcessInfo& p, const std::optional<ProcessInfo>& parent,
                        HolderClass klass) {
  std::string name = parent ? escape_terminal(parent->comm) : "?";
  std::string text = fmt::format("{} ({})", p.ppid, name);
  if (klass == HolderClass::kZombie) {
    text += " — has not reaped it; it disappears when that process calls wait() or exits";
  } else if (p.ppid == 1 && klass == HolderClass::kOrphan) {
    text += " — re-parented to init: its original parent is gone";
  }
  return text;
}

// "114800 bash run_server.sh --tp 8 (gone by 10:05:12)": what the flight recorder captured.
std::string recorded_parent_text(const RecordedParent& parent) {
  std::string text = fmt::format("{} {}", parent.pid, argv_text(parent.argv, 100));
  if (parent.gone_by) text += fmt::format(" (gone by {})", format_local_time(*parent.gone_by));
  return text + " — from gpuclean history";
}

std::string files_text(const HeldFile& f) {
  std::string text = escape_terminal(f.path);
  if (f.nvidia_minor) text += fmt::format(" (GPU minor {})", *f.nvidia_minor);
  if (!f.fds.empty()) {
    text += " fds";
    for (std::size_t i = 0; i < f.fds.size() && i < 8; ++i)
      text += (i ? "," : " ") + std::to_string(f.fds[i]);
    if (f.fds.size() > 8) text += ",…";
  }
  if (f.mapped) text += " mapped";
  if (f.via_thread) text += fmt::format(" (through thread {})", *f.via_thread);
  if (f.deleted) text += " (deleted)";
  if (f.opened_as) text += " (opened as " + escape_terminal(*f.opened_as) + ")";
  return text;
}

const DeadOwner* dead_owner_of(const Diagnosis& d, Pid pid) {
  for (const DeadOwner& owner : d.dead_owners) {
    if (owner.pid == pid) return &owner;
  }
  return nullptr;
}

// The ambiguous dead owners `pid` is a candidate heir of.
std::vector<const DeadOwner*> candidate_of(const Diagnosis& d, Pid pid) {
  std::vector<const DeadOwner*> out;
  for (const DeadOwner& owner : d.dead_owners) {
    if (!owner.ambiguous) continue;
    for (const DeadOwner::Candidate& c : owner.candidates) {
      if (c.pid == pid) out.push_back(&owner);
    }
  }
  return out;
}

// What one candidate's evidence says, without the "only one" that makes the weak rule decide.
std::string candidate_evidence(const HeirEvidence& evidence) {
  if (evidence.kind == HeirEvidence::Kind::kOrphanWithContext) {
    return "an orphan mapping an inherited CUDA context that NVML does not list";
  }
  return describe(evidence);
}

const Holder* holder_of(const Diagnosis& d, Pid pid) {
  for (const Holder& h : d.holders) {
    if (h.process.pid == pid) return &h;
  }
  return nullptr;
}

// The class of a process that holds none of the selected files: a zombie leader whose threads
// live on is one whatever files they hold (its files may be outside --device-glob).
HolderClass plain_class(const ProcessInfo& p) {
  if (p.state != 'Z') return HolderClass::kActive;
  return has_live_thread(p) ? HolderClass::kZombieLeader : HolderClass::kZombie;
}

// The threads through which the holder's files were seen (a zombie leader's own table is
// empty); none when its shared table holds them.
std::set<Pid> holding_threads(const Holder& h) {
  std::set<Pid> out;
  for (const HeldFile& f : h.devices) {
    if (f.via_thread) out.insert(*f.via_thread);
  }
  return out;
}

// At most this many threads are named one by one in the `threads` row; the rest are counted.
constexpr std::size_t kThreadsListed = 8;

// The wait channel most threads of `group` wait in: "" when none is shared by more than half.
std::string usual_wchan(const std::vector<const ThreadInfo*>& group) {
  std::map<std::string, std::size_t> counts;
  for (const ThreadInfo* t : group) ++counts[t->wchan];
  for (const auto& [wchan, count] : counts) {
    if (count * 2 > group.size()) return wchan;
  }
  return "";
}

// "4300 D nv_wait (stuck, holds the files)"; the wait channel only when it is not `usual`, the
// one its state's count already names.
std::string thread_label(const ThreadInfo& t, bool holds, const std::string& usual) {
  std::string label = fmt::format("{} {}", t.tid, t.state);
  if (!t.wchan.empty() && t.wchan != usual) label += " " + escape_terminal(t.wchan);
  if (t.stays_in_d && holds) return label + " (stuck, holds the files)";
  if (t.stays_in_d) return label + " (stuck)";
  return holds ? label + " (holds the files)" : label;
}

// The `threads` row: "121 threads: 119 S (futex_wait_queue), 2 R", counted by state with the
// wait channel the state's threads share, then by TID only the threads worth a look — in D, a
// wait channel unlike the rest of its state's, the ones the device files are held through —
// at most kThreadsListed of them. A 121-thread PyTorch process made one line of 3,757
// characters when every thread was listed; --json keeps every thread.
std::string thread_summary(const ProcessInfo& p, const std::set<Pid>& holding) {
  if (p.threads.empty()) return "unknown";
  if (p.threads.size() == 1) {
    const ThreadInfo& t = p.threads.front();
    return "1 thread: " + thread_label(t, holding.count(t.tid) > 0, "");
  }
  std::vector<char> states;  // in order of first appearance
  std::map<char, std::vector<const ThreadInfo*>> by_state;
  for (const ThreadInfo& t : p.threads) {
    if (by_state[t.state].empty()) states.push_back(t.state);
    by_state[t.state].push_back(&t);
  }
  std::stable_sort(states.begin(), states.end(),
                   [&by_state](char a, char b) { return by_state[a].size() > by_state[b].size(); });
  std::vector<std::string> counts;
  // Rank (D first, then the holding threads, then odd waits), the label.
  std::vector<std::pair<int, std::string>> notable;
  for (char state : states) {
    const std::vector<const ThreadInfo*>& group = by_state[state];
    const std::string usual = usual_wchan(group);
    const auto sharing = static_cast<std::size_t>(std::count_if(
        group.begin(), group.end(), [&usual](const ThreadInfo* t) { return t->wchan == usual; }));
    // "119 S (futex_wait_queue)" when all share it, "119 S (117 futex_wait_queue)" when most do.
    std::string count = fmt::format("{} {}", group.size(), state);
    if (!usual.empty()) {
      count += sharing == group.size() ? fmt::format(" ({})", escape_terminal(usual))
                                       : fmt::format(" ({} {})", sharing, escape_terminal(usual));
    }
    counts.push_back(std::move(count));
    for (const ThreadInfo* t : group) {
      const bool odd = !t->wchan.empty() && t->wchan != usual;
      const int rank = state == 'D' || t->stays_in_d ? 0 : holding.count(t->tid) > 0 ? 1 : 2;
      if (rank < 2 || odd) {
        notable.emplace_back(rank, thread_label(*t, holding.count(t->tid) > 0, usual));
      }
    }
  }
  std::stable_sort(notable.begin(), notable.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string text = fmt::format("{} threads: {}", p.threads.size(), fmt::join(counts, ", "));
  for (std::size_t i = 0; i < notable.size() && i < kThreadsListed; ++i) {
    text += (i == 0 ? " — " : ", ") + notable[i].second;
  }
  if (notable.size() > kThreadsListed) {
    text += fmt::format(", and {} more", notable.size() - kThreadsListed);
  }
  return text;
}

// The `thread` row of `explain TID`: what the thread asked about has to do with the files.
std::string thread_text(Pid tid, const Holder* holder) {
  if (holder == nullptr || holder->devices.empty()) {
    return fmt::format("{} (asked): a thread of this process, which holds no selected file", tid);
  }
  const std::set<Pid> through = holding_threads(*holder);
  if (through.count(tid) > 0) {
    return fmt::format("{} (asked): the selected files are held through this thread", tid);
  }
  if (!through.empty()) {
    return fmt::format("{} (asked): the selected files are held through thread {}", tid,
                       fmt::join(through, ", "));
  }
  return fmt::format("{} (asked): shares the process's file table, which holds the files", tid);
}

// The problems of `pid` itself, or of the process tree it is counted in (its root's); for a
// dead owner, those of the heirs holding its memory; for a candidate heir, those of the dead
// owners it may have inherited from.
std::vector<Problem> problems_about(const Diagnosis& d, Pid pid) {
  std::set<Pid> about{pid};
  for (const Holder& h : d.holders) {
    if (h.inherited_from == pid) about.insert(h.process.pid);
  }
  for (const DeadOwner* owner : candidate_of(d, pid)) about.insert(owner->pid);
  std::vector<Problem> out;
  for (const Problem& p : d.problems) {
    const bool in_tree =
        std::find(p.descendants.begin(), p.descendants.end(), pid) != p.descendants.end();
    if ((p.pid && about.count(*p.pid) > 0) || in_tree) out.push_back(p);
  }
  return out;
}

}  // namespace

namespace {

// The process as /proc shows it (or that /proc lacks it), and whether it is a node service or
// an MPS client.
void render_process(std::ostream& out, const StatusReport& report, const ExplainSubject& subject,
                    const Holder* holder, const ProcessInfo* p) {
  if (p != nullptr) {
    const HolderClass klass = holder != nullptr ? holder->klass : plain_class(*p);
    out << fmt::format("pid {} — {}{}\n", subject.pid, escape_terminal(p->comm),
                       holder != nullptr || klass != HolderClass::kActive
                           ? fmt::format(" ({})", to_string(klass))
                           : "");
    row(out, "state", state_meaning(*p, klass));
    row(out, "threads",
        thread_summary(*p, holder != nullptr ? holding_threads(*holder) : std::set<Pid>{}));
    row(out, "parent", parent_text(*p, subject.parent, klass));
    if (subject.recorded_parent && subject.recorded_parent->pid != p->ppid) {
      row(out, "recorded parent", recorded_parent_text(*subject.recorded_parent));
    }
    row(out, "session", fmt::format("sid {}, pgid {}", p->sid, p->pgid));
    row(out, "user", escape_terminal(p->user.empty() ? "?" : p->user));
    if (p->start_time) {
      row(out, "started",
          fmt::format("{} ({} ago)", rfc3339(*p->start_time),
                      format_age(report.time - *p->start_time)));
    }
    row(out, "cgroup", escape_terminal(p->cgroup.value_or("?")));
    if (p->owner) row(out, "owner", escape_terminal(owner_description(*p->owner)));
    if (p->nspid.size() > 1) {
      row(out, "pid ns",
          fmt::format("pid {} inside its own PID namespace (NSpid {})", p->nspid.back(),
                      fmt::join(p->nspid, " ")));
    }
    row(out, "command", full_command_label(*p, 400));
    if (holder != nullptr && holder->service) {
      row(out, "service",
          fmt::format("the node's {} ({}): holding the GPU is its job, never a problem while it "
                      "works; a kill target only by PID, with --yes",
                      describe(*holder->service), escape_terminal(holder->executable)));
    } else if (holder != nullptr && holder->mps_client) {
      row(out, "MPS",
          holder->mps_server
              ? fmt::format("a client of the MPS server pid {}: its GPU work runs in that "
                            "server's context",
                            *holder->mps_server)
              : std::string("a client of an MPS server (several run; which one is not known)"));
    }
  } else {
    out << fmt::format("pid {} — not in /proc{}\n", subject.pid,
                       dead_owner_of(report.diagnosis, subject.pid) != nullptr
                           ? " (a dead owner: NVML still names it, or it lives in another PID "
                             "namespace)"
                           : "");
  }
}

// The device files it holds, and the thread asked about.
void render_holdings(std::ostream& out, const ExplainSubject& subject, const Holder* holder,
                     const ProcessInfo* p) {
  if (holder != nullptr) {
    for (const HeldFile& f : holder->devices) row(out, "holds", files_text(f));
    if (holder->devices.empty() && holder->visible)
      row(out, "holds", "no device file (or its fd table is unreadable)");
  } else if (p != nullptr) {
    row(out, "holds", "no selected device file");
  }
  if (subject.thread) row(out, "thread", thread_text(*subject.thread, holder));
}

// Busy or idle on the GPUs it holds memory on (issue 37), or why that is unknown.
std::string activity_text(const StatusReport& report, const Holder& holder) {
  if (holder.activity) {
    const HolderActivity& a = *holder.activity;
    if (a.busy()) {
      return fmt::format("busy: SM {}%, memory {}% in NVML's latest sample", a.sm, a.mem);
    }
    std::string text = "idle: no GPU activity in NVML's latest samples";
    if (a.idle_s) {
      text += " (none for " +
              format_duration(std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::duration<double>(*a.idle_s))) +
              ")";
    }
    return text;
  }
  for (const GpuReport& g : report.diagnosis.gpus) {
    if (holder.gpu_memory.count(g.gpu.index) > 0 && !g.gpu.activity_unavailable.empty()) {
      return fmt::format("unknown (GPU {}: {})", g.gpu.index,
                         escape_terminal(g.gpu.activity_unavailable));
    }
  }
  return "unknown";
}

// What NVML attributes to it (or to the dead PID it inherited from).
const Gpu* drm_gpu(const Diagnosis& d, unsigned index) {
  for (const GpuReport& g : d.gpus) {
    if (g.gpu.index == index && g.gpu.source == Gpu::Source::kDrm) return &g.gpu;
  }
  return nullptr;
}

// What an AMD or Intel GPU's clients hold for it (their fdinfo); true when it has any.
bool render_drm(std::ostream& out, const StatusReport& report, const Holder* holder) {
  bool any = false;
  if (holder == nullptr) return any;
  for (const auto& [gpu, bytes] : holder->gpu_memory) {
    if (const Gpu* g = drm_gpu(report.diagnosis, gpu)) {
      row(out, "DRM",
          fmt::format("GPU {}: {} in its clients' fdinfo ({} {})", gpu, format_bytes(bytes),
                      escape_terminal(g->driver), escape_terminal(g->pci_bus_id)));
      any = true;
    }
  }
  return any;
}

void render_nvml(std::ostream& out, const StatusReport& report, const ExplainSubject& subject,
                 const Holder* holder) {
  const Diagnosis& d = report.diagnosis;
  const bool drm_memory = render_drm(out, report, holder);
  const bool drm_gpus = std::any_of(d.gpus.begin(), d.gpus.end(), [](const GpuReport& g) {
    return g.gpu.source == Gpu::Source::kDrm;
  });
  const bool nvidia_memory =
      holder != nullptr &&
      std::any_of(holder->gpu_memory.begin(), holder->gpu_memory.end(),
                  [&d](const auto& e) { return drm_gpu(d, e.first) == nullptr; });
  if (report.nvml_state != NvmlState::kPresent) {
    // On an AMD or Intel machine no NVML is normal: said only when it failed.
    if (!drm_gpus || report.nvml_state == NvmlState::kFailed) {
      row(out, "NVML",
          "not available (" + std::string(to_string(report.nvml_state)) +
              (drm_gpus ? "): NVIDIA GPU memory unknown" : "): GPU memory unknown"));
    }
    if (drm_memory) row(out, "activity", activity_text(report, *holder));
  } else if (nvidia_memory) {
    for (const auto& [gpu, bytes] : holder->gpu_memory) {
      if (drm_gpu(d, gpu) != nullptr) continue;
      row(out, "NVML",
          fmt::format("GPU {}: {}{}", gpu, format_bytes(bytes),
                      holder->inherited_from
                          ? fmt::format(" (NVML names dead pid {})", *holder->inherited_from)
                          : ""));
    }
    row(out, "activity", activity_text(report, *holder));
  } else if (const DeadOwner* owner = dead_owner_of(d, subject.pid);
             owner != nullptr && !owner->gpu_memory.empty()) {
    // A handed-on PID: /proc has the PID, but the process NVML meant died (this one holds no
    // GPU file).
    const char* whose = owner->pid_handed_on
                            ? "for a process that died; this one got its PID and holds no GPU file"
                            : "for this pid, which /proc lacks";
    for (const auto& [gpu, bytes] : owner->gpu_memory) {
      row(out, "NVML", fmt::format("GPU {}: {} ({})", gpu, format_bytes(bytes), whose));
    }
  } else if (drm_memory) {
    row(out, "activity", activity_text(report, *holder));
  } else {
    row(out, "NVML", "names no GPU memory for it");
  }
}

// Heirs and dead owners: its evidence, the dead owners it may hold the context of, its heir, or
// why it has none.
void render_heirs(std::ostream& out, const Diagnosis& d, const ExplainSubject& subject,
                  const Holder* holder) {
  if (holder != nullptr && holder->heir) {
    row(out, "evidence", escape_terminal(describe(*holder->heir)));
  }
  for (const DeadOwner* owner : candidate_of(d, subject.pid)) {
    for (const DeadOwner::Candidate& c : owner->candidates) {
      if (c.pid != subject.pid) continue;
      row(out, "candidate",
          fmt::format("may hold the context of dead pid {} ({}), but it is not named heir: {}",
                      owner->pid, candidate_evidence(c.evidence), owner->ambiguity));
    }
  }
  for (const Holder& h : d.holders) {
    if (h.inherited_from == subject.pid) {
      row(out, "heir",
          fmt::format("pid {} ({}) holds its context now; evidence: {}", h.process.pid,
                      escape_terminal(h.process.comm),
                      h.heir ? describe(*h.heir) : std::string("none recorded")));
    }
  }
  if (const DeadOwner* owner = dead_owner_of(d, subject.pid); owner != nullptr) {
    if (owner->ambiguous) {
      for (const DeadOwner::Candidate& c : owner->candidates) {
        const Holder* h = holder_of(d, c.pid);
        row(out, "candidate",
            fmt::format("pid {} ({}, {}): {}", c.pid,
                        h != nullptr ? escape_terminal(h->process.comm) : std::string("?"),
                        h != nullptr ? to_string(h->klass) : "?", candidate_evidence(c.evidence)));
      }
      row(out, "no heir", "the evidence is ambiguous: " + owner->ambiguity);
    } else if (owner->candidates.empty()) {
      row(out, "no heir",
          "no holder here is tied to it (no process group or session it led, no lone orphan "
          "with an inherited CUDA context)");
    }
  }
}

// Its problems with their fixes, or why it has none.
void render_explain_verdict(std::ostream& out, const StatusReport& report,
                            const ExplainSubject& subject, const Holder* holder,
                            const ProcessInfo* p) {
  const Diagnosis& d = report.diagnosis;
  const std::vector<Problem> problems = problems_about(d, subject.pid);
  for (const Problem& problem : problems) {
    // A warning (a stray context) does not make the GPUs dirty: it is not called a problem.
    row(out, problem.severity == Severity::kWarning ? "warning" : "problem",
        escape_terminal(problem.message));
    row(out, "fix", escape_terminal(problem.fix));
  }
  if (problems.empty()) {
    if (p == nullptr && holder == nullptr) {
      row(out, "verdict", "no such process, and NVML attributes no memory to it");
    } else if (holder != nullptr && holder->service) {
      row(out, "verdict", "a node service at work: never a problem");
    } else if (holder != nullptr && holder->klass == HolderClass::kMonitor &&
               std::all_of(holder->devices.begin(), holder->devices.end(),
                           [](const HeldFile& f) { return f.drm.has_value(); })) {
      row(out, "verdict",
          "a display (primary DRM nodes only, no render node or /dev/kfd, display-sized "
          "memory): never a problem");
    } else if (holder != nullptr && holder->klass == HolderClass::kMonitor) {
      row(out, "verdict", "a monitor (NVML/control files only, no CUDA context): never a problem");
    } else if (report.nvml_state != NvmlState::kPresent && holder == nullptr) {
      // Without NVML its memory was not seen: only the files are.
      row(out, "verdict", "holds no selected device file: nothing to do for them");
    } else {
      row(out, "verdict", "holds no GPU memory: nothing to do");
    }
  }
}

}  // namespace

void render_explain_text(std::ostream& out, const StatusReport& report,
                         const ExplainSubject& subject) {
  const Holder* holder = subject.holder ? &*subject.holder : nullptr;
  const ProcessInfo* p = holder != nullptr && holder->visible ? &holder->process
                         : subject.process                    ? &*subject.process
                                                              : nullptr;
  if (subject.thread) {
    out << fmt::format("thread {} of pid {}: explained as its thread group\n", *subject.thread,
                       subject.pid);
  }
  render_process(out, report, subject, holder, p);
  render_holdings(out, subject, holder, p);
  render_nvml(out, report, subject, holder);
  render_heirs(out, report.diagnosis, subject, holder);
  render_explain_verdict(out, report, subject, holder, p);
}

void render_explain_json(std::ostream& out, const StatusReport& report,
                         const ExplainSubject& subject) {
  nlohmann::json doc = document_header(report.host, report.time);
  doc["pid"] = subject.pid;
  doc["thread"] = or_null(subject.thread);
  doc["holder"] = subject.holder ? to_json(*subject.holder) : nlohmann::json();
  doc["holding_threads"] = nlohmann::json::array();
  if (subject.holder) {
    for (Pid tid : holding_threads(*subject.holder)) doc["holding_threads"].push_back(tid);
  }
  if (subject.process) {
    Holder plain;
    plain.process = *subject.process;
    plain.klass = plain_class(*subject.process);
    doc["process"] = to_json(plain);
  } else {
    doc["process"] = nullptr;
  }
  doc["heirs"] = nlohmann::json::array();
  for (const Holder& h : report.diagnosis.holders) {
    if (h.inherited_from == subject.pid) doc["heirs"].push_back(h.process.pid);
  }
  const DeadOwner* owner = dead_owner_of(report.diagnosis, subject.pid);
  doc["recorded_parent"] = nullptr;
  if (subject.recorded_parent) {
    const RecordedParent& parent = *subject.recorded_parent;
    doc["recorded_parent"] = {
        {"pid", parent.pid}, {"argv", parent.argv}, {"gone_by", or_null(parent.gone_by)}};
  }
  doc["dead_owner"] = owner != nullptr ? to_json(*owner) : nlohmann::json();
  doc["candidate_of"] = nlohmann::json::array();
  for (const DeadOwner* of : candidate_of(report.diagnosis, subject.pid)) {
    doc["candidate_of"].push_back(of->pid);
  }
  doc["problems"] = to_json_array(problems_about(report.diagnosis, subject.pid));
  doc["nvml"] = {{"state", to_string(report.nvml_state)}, {"message", report.nvml_message}};
  write_json(out, doc);
}

}  // namespace gpuclean::output
