#include "diagnose/diagnosis.h"

#include <algorithm>
#include <iterator>

#include "core/escape.h"
#include "core/units.h"
#include "diagnose/classify.h"

namespace gpuclean::diagnose {
namespace {

bool is_nvidia_file(const HeldFile& file) {
  return file.path.rfind("/dev/nvidia", 0) == 0;
}

// Holding this file means holding the device: a mapped GPU or UVM file (a CUDA context maps
// /dev/nvidia-uvm and /dev/nvidiaN; an NVML-only monitor maps only nvidiactl), or any file of
// a non-NVIDIA selection (--device-glob), where there is no monitor to tell apart.
bool holds_like_context(const HeldFile& file) {
  if (file.drm) return false;  // an AMD or Intel GPU's node: never an NVIDIA context
  if (!is_nvidia_file(file)) return true;
  return file.mapped &&
         (file.nvidia_minor.has_value() || file.path.rfind("/dev/nvidia-uvm", 0) == 0) &&
         file.path != "/dev/nvidia-uvm-tools";
}

std::string holder_label(const Holder& h) {
  return "pid " + std::to_string(h.process.pid) + " (" + short_name(h.process) + ")";
}

// The thread that makes it stuck: one that stayed in D across the re-check, else any in D.
const ThreadInfo* stuck_thread(const ProcessInfo& p) {
  for (const ThreadInfo& t : p.threads) {
    if (t.stays_in_d) return &t;
  }
  for (const ThreadInfo& t : p.threads) {
    if (t.state == 'D') return &t;
  }
  return nullptr;
}

// A frozen holder's problem: its group waits for a thaw, which only its owner should decide
// (a suspended Slurm job is frozen too), so gpuclean says how and never thaws on its own.
void frozen_problem(const Holder& h, const std::string& where, const std::string& amount,
                    Problem& p) {
  const FrozenCgroup& frozen = *h.process.frozen;
  const bool v1 = frozen.version == FrozenCgroup::Version::kV1Freezer;
  const std::string pid = std::to_string(h.process.pid);
  p.kind = ProblemKind::kFrozen;
  p.message = where + amount + "frozen " + holder_label(h) + ": its cgroup " + frozen.directory +
              (v1 ? " is FROZEN (cgroup v1 freezer)" : " is frozen (cgroup v2)") +
              "; it runs again only when thawed" + (v1 ? ", and even SIGKILL waits for that" : "");
  std::string fix;
  if (h.process.owner && h.process.owner->kind == Owner::Kind::kSlurmJob) {
    fix = "scontrol resume " + h.process.owner->id + " (a suspended Slurm job is frozen), or ";
  }
  fix += "thaw its group: " + thaw_command(frozen) +
         " (every process of the group resumes; gpuclean never thaws on its own)";
  fix += v1 ? "; then, if it is not wanted, gpuclean kill " + pid
            : "; or end it frozen: gpuclean kill " + pid + " (cgroup v2 lets SIGKILL through)";
  p.fix = std::move(fix);
}

const ThreadInfo* live_thread(const ProcessInfo& p) {
  for (const ThreadInfo& t : p.threads) {
    if (t.state != 'Z' && t.state != 'X') return &t;
  }
  return nullptr;
}

// The fix for a leftover: its kill, or, in a run's group (gpuclean run was killed before its
// teardown), the kill of everything the run left there, which also removes the emptied group.
std::string leftover_fix(const Holder& h) {
  const std::optional<Owner>& owner = h.process.owner;
  if (owner && owner->kind == Owner::Kind::kRun) {
    return "gpuclean kill --cgroup " + shell_word(owner->full_id) + " (what gpuclean run " +
           owner->id + " left in its group)";
  }
  return "gpuclean kill " + std::to_string(h.process.pid);
}

// A leftover's fix, and its message's end, by what it does on the GPU: a busy one may be a
// detached server still doing someone's work (issue 37).
void leftover_problem(const Holder& h, Problem& p) {
  p.message += activity_note(h);
  p.computing = busy_reason(h).has_value();
  p.fix = p.computing ? "check whose work it is before killing it (gpuclean explain " +
                            std::to_string(h.process.pid) + "); then " + leftover_fix(h)
                      : leftover_fix(h);
}

// A leftover root whose owner may live (an orphan) is still at work when a holder of its tree
// is (a server's worker serving): its problem says which, and --leftovers leaves the tree.
void member_computing(const Holder& root, const Holder& member, Problem& p) {
  if (p.computing || owner_gone(root)) return;
  const HolderActivity& a = *member.activity;
  p.computing = true;
  p.message += "; its descendant pid " + std::to_string(member.process.pid) +
               " is still computing (SM " + std::to_string(a.sm) + "%, memory " +
               std::to_string(a.mem) + "%)";
  p.fix = "check whose work it is before killing it (gpuclean explain " +
          std::to_string(member.process.pid) + "); then " + leftover_fix(root);
}

// The problem for one holder on one GPU (gpu/bytes absent: no NVML view).
Problem holder_problem(const Holder& h, std::optional<unsigned> gpu, std::optional<Bytes> bytes) {
  Problem p;
  p.gpu = gpu;
  p.pid = h.process.pid;
  const std::string pid = std::to_string(h.process.pid);
  const std::string where = gpu ? "GPU " + std::to_string(*gpu) + ": " : "";
  const std::string amount = bytes ? format_bytes(*bytes) + " held by " : "device files held by ";
  const std::string label = holder_label(h);
  switch (h.klass) {
    case HolderClass::kStuck: {
      const ThreadInfo* t = stuck_thread(h.process);
      p.kind = ProblemKind::kStuck;
      if (h.process.memory_map_locked) {
        // Its command line did not come: a thread holds the mmap lock while it waits (a page
        // fault on a FUSE or NFS file whose server does not answer, say). Not the driver's
        // doing: killing it works once that wait ends.
        p.message = where + amount + "stuck " + label +
                    ": its memory map is locked (a thread is stuck; see its wait channels" +
                    (t != nullptr && !t->wchan.empty()
                         ? ": thread " + std::to_string(t->tid) + " in " + t->wchan
                         : "") +
                    ")";
        p.fix = "gpuclean kill " + pid +
                " (it ends when its stuck thread's wait ends: see what it waits on in "
                "/proc/" +
                pid +
                "/task/*/wchan; a hung FUSE or NFS mount must answer or be "
                "aborted)";
        return p;
      }
      p.message = where + amount + "stuck " + label + ": thread " +
                  std::to_string(t != nullptr ? t->tid : h.process.pid) +
                  " is in uninterruptible sleep (D" +
                  (t != nullptr && !t->wchan.empty() ? ", in " + t->wchan : "") +
                  "); signals will not free it";
      // A GPU reset needs the device closed, which this process does not do: gpuclean reset
      // names it a blocker that only a reboot clears (issue 53).
      p.fix = gpu ? "only a reboot frees this for sure: a GPU reset waits for it too (gpuclean "
                    "reset --gpus " +
                        std::to_string(*gpu) + " shows what stands in its way)"
                  : "only a GPU reset or a reboot frees this";
      return p;
    }
    case HolderClass::kFrozen:
      if (h.process.frozen) {
        frozen_problem(h, where, amount, p);
        return p;
      }
      break;
    case HolderClass::kZombieLeader: {
      const ThreadInfo* t = live_thread(h.process);
      p.kind = ProblemKind::kZombieLeader;
      p.message = where + amount + "zombie-led " + label + ": its main thread exited, thread " +
                  std::to_string(t != nullptr ? t->tid : h.process.pid) +
                  " keeps the files (invisible to fuser and lsof)";
      // SIGKILL to the leader's PID ends the whole group (docs/facts.md); gpuclean kill escalates
      // to it and verifies.
      leftover_problem(h, p);
      return p;
    }
    case HolderClass::kHeir:
      p.kind = ProblemKind::kHeir;
      p.message = where + amount + "heir " + label + ": it inherited the CUDA context of pid " +
                  std::to_string(h.inherited_from.value_or(0)) +
                  (h.heir && h.heir->pid_handed_on
                       ? ", which is gone (its PID now names another process, which holds no "
                         "GPU file)"
                       : ", which is gone (nvidia-smi shows that pid as [Not Found])");
      leftover_problem(h, p);
      return p;
    case HolderClass::kOrphan:
      p.kind = ProblemKind::kOrphan;
      p.message = where + amount + "orphan " + label + ": its parent is gone";
      leftover_problem(h, p);
      return p;
    case HolderClass::kForeign:
      p.kind = ProblemKind::kForeign;
      if (h.pid_handed_on) {
        p.message = where + amount + "pid " + pid +
                    ", which exited: its PID now names another process, which holds no GPU "
                    "device file (whatever holds the memory is not a process here)";
        p.fix =
            "look for a process that inherited its CUDA context (gpuclean explain) in "
            "containers on this node; if none holds it, only a GPU reset or a reboot frees it" +
            (gpu ? " (gpuclean reset --gpus " + std::to_string(*gpu) +
                       " shows what stands in the reset's way)"
                 : std::string());
        return p;
      }
      p.message = where + amount + "pid " + pid +
                  ", which this PID namespace cannot see (a container, or a process on the host "
                  "when gpuclean runs in one)";
      p.fix =
          "run gpuclean in the host's PID namespace (e.g. nsenter -t 1 -p -m gpuclean) or "
          "look in the other containers on this node";
      return p;
    case HolderClass::kZombie:
      // It has exited but NVML still counts its memory: the driver is tearing the context
      // down (docs/facts.md: ~0.12–0.16 s after SIGKILL). Not clean until that is done.
      p.kind = ProblemKind::kExiting;
      p.message = where + (bytes ? format_bytes(*bytes) : std::string("memory")) +
                  " still counted for " + label + ", which has exited; the driver is releasing it";
      p.fix = "wait for the release (gpuclean wait)";
      return p;
    case HolderClass::kActive:
    case HolderClass::kMonitor:
      break;
  }
  p.kind = bytes ? ProblemKind::kInUse : ProblemKind::kHolder;
  p.message = where + (bytes ? format_bytes(*bytes) + " in use by " : "device files held by ") +
              label + (h.process.user.empty() ? "" : ", user " + h.process.user);
  p.fix = "wait for it (gpuclean wait) or stop it: gpuclean kill " + pid;
  return p;
}

std::string gpu_list_text(const std::set<unsigned>& gpus) {
  std::string text;
  std::size_t i = 0;
  for (unsigned gpu : gpus) {
    if (i > 0) text += i + 1 == gpus.size() ? " and " : ", ";
    text += std::to_string(gpu);
    ++i;
  }
  return (gpus.size() == 1 ? "GPU " : "GPUs ") + text;
}

// A stray CUDA context of `h` on `gpu` (stray_context_gpus): the GPUs it works on are the
// others it has memory on. CUDA_VISIBLE_DEVICES takes CUDA's device order; NVML's index is
// PCI bus order, which is CUDA's too for GPUs of one model (and always with
// CUDA_DEVICE_ORDER=PCI_BUS_ID).
Problem stray_problem(const Holder& h, unsigned gpu, Bytes bytes, const std::set<unsigned>& stray,
                      const Options& options) {
  std::set<unsigned> work;
  for (const auto& entry : h.gpu_memory) {
    if (stray.count(entry.first) == 0) work.insert(entry.first);
  }
  std::string visible;
  for (unsigned w : work) visible += (visible.empty() ? "" : ",") + std::to_string(w);
  Problem p;
  p.kind = ProblemKind::kStrayContext;
  p.severity = options.strict ? Severity::kError : Severity::kWarning;
  p.gpu = gpu;
  p.pid = h.process.pid;
  p.message = "GPU " + std::to_string(gpu) + ": " + format_bytes(bytes) +
              " held by a stray CUDA context of " + holder_label(h) + ", which works on " +
              gpu_list_text(work);
  p.fix = "start it with CUDA_VISIBLE_DEVICES=" + visible +
          " (it sees every GPU, and a context costs ~500 MiB on each one it touches); this "
          "memory comes back when it exits";
  return p;
}

bool selected(const Options& options, unsigned gpu) {
  return !options.gpus || options.gpus->count(gpu) > 0;
}

bool excused(const Options& options, const Holder& h) {
  return options.ignore_pids.count(h.process.pid) > 0 ||
         (!h.process.user.empty() && options.allow_users.count(h.process.user) > 0);
}

// NVML's figure for each PID on each GPU. A PID in several lists (an MPS client is in the
// compute and the MPS list: docs/facts.md) counts its largest figure once, never the sum.
std::map<unsigned, std::map<Pid, Bytes>> listed_memory(const GpuView& view) {
  std::map<unsigned, std::map<Pid, Bytes>> out;
  for (const Gpu& gpu : view.gpus) {
    std::map<Pid, Bytes>& per_pid = out[gpu.index];
    for (const GpuProcess& p : gpu.processes) {
      Bytes& figure = per_pid[p.pid];
      figure = std::max(figure, p.used_memory.value_or(0));
    }
  }
  return out;
}

std::string pid_list(const std::vector<DeadOwner::Candidate>& candidates, const char* last_joint) {
  std::string text;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (i > 0) text += i + 1 == candidates.size() ? last_joint : ", ";
    text += std::to_string(candidates[i].pid);
  }
  return text;
}

std::string count_of(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Ties the heir candidates (holders NVML does not list that map a CUDA context) to the dead
// owners (docs/design.md "Diagnosis"). Strong evidence: the candidate's process group or
// session ID is the dead PID (group first: it is the closer tie). Weak evidence, only for the
// owners no candidate has strong evidence for: an orphan candidate without strong evidence,
// and only when it is the one such orphan and the owner the one owner left. One candidate
// with evidence names the heir; more than one, or a weak pairing that is not one to one,
// names nobody and marks the owner ambiguous.
std::vector<DeadOwner> tie_heirs(const std::map<Pid, std::map<unsigned, Bytes>>& dead,
                                 const std::vector<const Holder*>& candidates) {
  std::vector<DeadOwner> owners;
  std::map<Pid, std::size_t> index_of;
  for (const auto& [pid, memory] : dead) {
    index_of[pid] = owners.size();
    DeadOwner owner;
    owner.pid = pid;
    owner.gpu_memory = memory;
    owners.push_back(std::move(owner));
  }
  std::vector<const Holder*> untied_orphans;
  for (const Holder* c : candidates) {
    const ProcessInfo& p = c->process;
    std::optional<HeirEvidence> tie;
    if (auto it = index_of.find(p.pgid); it != index_of.end()) {
      tie = HeirEvidence{p.pgid, HeirEvidence::Kind::kProcessGroup};
    } else if (auto jt = index_of.find(p.sid); jt != index_of.end()) {
      tie = HeirEvidence{p.sid, HeirEvidence::Kind::kSession};
    }
    if (tie) {
      owners[index_of.at(tie->dead_owner)].candidates.push_back({p.pid, *tie});
    } else if (c->klass == HolderClass::kOrphan && looks_like_context(*c)) {
      // The weak rule needs the inherited mapping; a holder of unmapped files is tied to a dead
      // owner only by its group or session.
      untied_orphans.push_back(c);
    }
  }
  std::vector<DeadOwner*> unexplained;
  for (DeadOwner& owner : owners) {
    if (owner.candidates.empty()) unexplained.push_back(&owner);
  }
  if (!untied_orphans.empty()) {
    for (DeadOwner* owner : unexplained) {
      for (const Holder* orphan : untied_orphans) {
        owner->candidates.push_back(
            {orphan->process.pid, {owner->pid, HeirEvidence::Kind::kOrphanWithContext}});
      }
    }
  }
  for (DeadOwner& owner : owners) {
    std::sort(
        owner.candidates.begin(), owner.candidates.end(),
        [](const DeadOwner::Candidate& a, const DeadOwner::Candidate& b) { return a.pid < b.pid; });
    if (owner.candidates.empty()) continue;
    const bool weak =
        owner.candidates.front().evidence.kind == HeirEvidence::Kind::kOrphanWithContext;
    if (owner.candidates.size() == 1 && (!weak || unexplained.size() == 1)) {
      owner.heir = owner.candidates.front().pid;
      continue;
    }
    owner.ambiguous = true;
    if (!weak) {
      owner.ambiguity = "pids " + pid_list(owner.candidates, " and ") +
                        " are each in the process group or session it led, so nothing singles "
                        "out the one holding its context";
    } else {
      owner.ambiguity = count_of(untied_orphans.size(), "orphan maps", "orphans map") +
                        " an inherited CUDA context and " +
                        count_of(unexplained.size(), "dead owner is", "dead owners are") +
                        " left unexplained, so which context came from which cannot be told";
    }
  }
  return owners;
}

// Caps the problems of each GPU at its used memory: take() hands out at most what is left.
class UsedMemoryBudget {
 public:
  UsedMemoryBudget(const GpuView& view, const std::map<unsigned, std::map<Pid, Bytes>>& listed) {
    for (const Gpu& gpu : view.gpus) {
      if (!gpu.memory) continue;  // used unknown: nothing to cap at
      Bytes total = 0;
      if (auto it = listed.find(gpu.index); it != listed.end()) {
        for (const auto& entry : it->second) total += entry.second;
      }
      left_[gpu.index] = gpu.memory->used;
      const char* figures =
          gpu.source == Gpu::Source::kDrm ? "its clients' figures" : "NVML's per-process figures";
      note_[gpu.index] = std::string(" (cut to fit: ") + figures + " on GPU " +
                         std::to_string(gpu.index) + " add up to " + format_bytes(total) +
                         ", more than the " + format_bytes(gpu.memory->used) + " used)";
    }
  }
  // The bytes to report out of `bytes` on `gpu`, and the note to append when they were cut.
  std::pair<Bytes, std::string> take(unsigned gpu, Bytes bytes) {
    auto it = left_.find(gpu);
    if (it == left_.end()) return {bytes, ""};
    const Bytes shown = std::min(bytes, it->second);
    it->second -= shown;
    return {shown, shown < bytes ? note_.at(gpu) : ""};
  }

 private:
  std::map<unsigned, Bytes> left_;
  std::map<unsigned, std::string> note_;
};

// The problem for a dead owner whose heir cannot be named: its memory, the candidates and
// why none was chosen. The fix is to look, not to kill: any of them may be innocent.
Problem ambiguous_problem(const DeadOwner& owner, unsigned gpu, Bytes bytes,
                          const std::string& note) {
  Problem p;
  p.kind = ProblemKind::kHeirAmbiguous;
  p.gpu = gpu;
  p.pid = owner.pid;
  p.bytes = bytes;
  p.message = "GPU " + std::to_string(gpu) + ": " + format_bytes(bytes) +
              " still counted for dead pid " + std::to_string(owner.pid) + "; " +
              (owner.candidates.size() == 1 ? "pid " : "one of pids ") +
              pid_list(owner.candidates, " or ") +
              " may hold its context, but the evidence is ambiguous: " + owner.ambiguity + note;
  std::string looks;
  for (const DeadOwner::Candidate& c : owner.candidates) {
    looks += (looks.empty() ? "" : ", ") + std::string("gpuclean explain ") + std::to_string(c.pid);
  }
  p.fix = "look at each candidate (" + looks + ") and stop the one that is yours";
  return p;
}

bool is_plain_live(const Holder& h) {
  return h.klass == HolderClass::kActive || h.klass == HolderClass::kOrphan;
}

// A node service doing its job: holding the GPU is what it is for. A stuck or zombie-led one
// (or a zombie the driver still counts memory for) is reported like any holder.
bool service_at_work(const Holder& h) {
  // A monitoring tool owns no compute context: memory NVML lists for one is not its job.
  if (h.service == NodeService::kMonitorTool && !h.gpu_memory.empty()) return false;
  return h.service && (h.klass == HolderClass::kActive || h.klass == HolderClass::kOrphan ||
                       h.klass == HolderClass::kMonitor);
}

std::set<Pid> mps_listed(const GpuView& view) {
  std::set<Pid> out;
  for (const Gpu& gpu : view.gpus) {
    for (const GpuProcess& p : gpu.processes) {
      if (p.kind == GpuProcess::Kind::kMps) out.insert(p.pid);
    }
  }
  return out;
}

// The MPS server `client` runs under: the only one, or the only one of its user, or among its
// user's servers the only one with its pipe directory — the directory is what a client connects
// through (issue 48 item 10: a second server of the same user, left by an earlier run with
// another CUDA_MPS_PIPE_DIRECTORY, left every client without its server). A server of that user
// whose directory is not known might be the one: then none is named.
std::optional<Pid> server_of(const Holder& client, const std::vector<const Holder*>& servers) {
  if (servers.size() == 1) return servers.front()->process.pid;
  std::vector<const Holder*> users;
  std::copy_if(servers.begin(), servers.end(), std::back_inserter(users),
               [&client](const Holder* s) {
                 return s->process.uid && s->process.uid == client.process.uid;
               });
  if (users.size() == 1) return users.front()->process.pid;
  if (users.empty() || !client.mps_pipe_directory) return std::nullopt;
  std::optional<Pid> found;
  for (const Holder* s : users) {
    if (!s->mps_pipe_directory) return std::nullopt;
    if (*s->mps_pipe_directory != *client.mps_pipe_directory) continue;
    if (found) return std::nullopt;
    found = s->process.pid;
  }
  return found;
}

std::string pids_text(const std::set<Pid>& pids) {
  std::string text;
  for (Pid pid : pids) text += (text.empty() ? "" : ", ") + std::to_string(pid);
  return text;
}

// How to free what an MPS server holds: MPS's own command, and only once no client runs (a
// kill of the server takes every client's GPU work down with it).
std::string mps_fix(const std::set<Pid>& live_clients) {
  constexpr const char* kQuit =
      "echo quit | nvidia-cuda-mps-control (ends the MPS server and frees its memory; "
      "nvidia-cuda-mps-control -d starts MPS again)";
  if (live_clients.empty()) return kQuit;
  return "once the MPS clients still running (pid" +
         std::string(live_clients.size() > 1 ? "s " : " ") + pids_text(live_clients) +
         ") are done: " + std::string(kQuit) + "; never kill the server while clients run";
}

// Memory an MPS server holds for clients that are gone: a gone PID still in an MPS list, and a
// server above its idle size on a GPU where no client is left.
struct MpsLeftovers {
  std::map<unsigned, std::map<Pid, Bytes>> gone_clients;  // GPU → gone client → bytes
  std::set<Pid> live_clients;                             // on the whole node
};

// The "mps-leftover" problems (see diagnose()'s contract).
void mps_problems(const std::vector<Holder>& holders, const MpsLeftovers& mps,
                  const Options& options, UsedMemoryBudget& budget,
                  std::vector<Problem>& problems) {
  // A live client of `server` (or of a server not known) on `gpu`: its memory may be what the
  // server holds there.
  auto client_on = [&holders](unsigned gpu, Pid server) {
    return std::any_of(holders.begin(), holders.end(), [gpu, server](const Holder& h) {
      return h.mps_client && (!h.mps_server || *h.mps_server == server) &&
             has_live_thread(h.process) && h.gpu_memory.count(gpu) > 0;
    });
  };
  std::vector<Pid> servers;
  for (const Holder& h : holders) {
    if (h.service == NodeService::kMpsServer) servers.push_back(h.process.pid);
  }
  // Who holds a gone client's memory, as the messages name it.
  std::string holder_of_gone = "an MPS server";
  if (servers.size() == 1) {
    holder_of_gone = "the MPS server (pid " + std::to_string(servers.front()) + ")";
  } else if (servers.empty()) {
    holder_of_gone =
        "an MPS server gpuclean does not recognise (not a trusted executable, or not visible "
        "here)";
  }
  for (const Holder& h : holders) {
    if (h.service != NodeService::kMpsServer) continue;
    if (!service_at_work(h) || excused(options, h)) continue;
    for (const auto& [gpu, bytes] : h.gpu_memory) {
      if (!selected(options, gpu) || bytes <= kMpsServerIdleMax || client_on(gpu, h.process.pid)) {
        continue;
      }
      const auto [shown, note] = budget.take(gpu, bytes);
      Problem p;
      p.kind = ProblemKind::kMpsLeftover;
      p.gpu = gpu;
      p.pid = h.process.pid;
      p.bytes = shown;
      p.message = "GPU " + std::to_string(gpu) + ": " + format_bytes(shown) +
                  " held by MPS server " + holder_label(h) +
                  " with no MPS client left on this GPU (its own context is under " +
                  format_bytes(kMpsServerIdleMax) + "): memory of clients that are gone" + note;
      p.fix = mps_fix(mps.live_clients);
      problems.push_back(std::move(p));
    }
  }
  for (const auto& [gpu, clients] : mps.gone_clients) {
    if (!selected(options, gpu)) continue;
    for (const auto& [pid, bytes] : clients) {
      if (options.ignore_pids.count(pid) > 0) continue;
      const auto [shown, note] = budget.take(gpu, bytes);
      Problem p;
      p.kind = ProblemKind::kMpsLeftover;
      p.gpu = gpu;
      p.pid = pid;
      p.bytes = shown;
      p.message = "GPU " + std::to_string(gpu) + ": " + format_bytes(shown) +
                  " still counted for MPS client pid " + std::to_string(pid) + ", which is gone; ";
      p.message += holder_of_gone;
      p.message += " holds it";
      p.message += note;
      p.fix =
          "gpuclean wait (a client's memory comes back within seconds of its exit); if it "
          "stays: " +
          mps_fix(mps.live_clients);
      problems.push_back(std::move(p));
    }
  }
}

}  // namespace

std::set<unsigned> stray_context_gpus(const Holder& holder) {
  // Only a process at work: an orphan's or heir's memory is a leftover on every GPU, a node
  // service's is its job, and an MPS client's figures are the MPS server's way of counting.
  if (holder.klass != HolderClass::kActive || !holder.visible || holder.service ||
      holder.mps_client || holder.inherited_from) {
    return {};
  }
  std::set<unsigned> stray;
  for (const auto& entry : holder.gpu_memory) {
    const unsigned gpu = entry.first;
    const Bytes bytes = entry.second;
    if (bytes == 0 || bytes > kStrayContextMax) continue;  // 0: NVML gave no figure
    const bool works_elsewhere = std::any_of(
        holder.gpu_memory.begin(), holder.gpu_memory.end(), [gpu, bytes](const auto& other) {
          return other.first != gpu && other.second >= bytes + kStrayWorkMargin;
        });
    if (works_elsewhere) stray.insert(gpu);
  }
  return stray;
}

bool looks_like_context(const Holder& holder) {
  return std::any_of(holder.devices.begin(), holder.devices.end(), holds_like_context);
}

std::string short_name(const ProcessInfo& process) {
  if (!process.cmdline.empty() && !process.cmdline[0].empty()) {
    const std::string& arg0 = process.cmdline[0];
    const std::size_t slash = arg0.rfind('/');
    std::string name = slash == std::string::npos ? arg0 : arg0.substr(slash + 1);
    if (!name.empty()) return cut_for_display(name, kShortNameChars);
  }
  return cut_for_display(process.comm, kShortNameChars);
}

namespace {

Holder* find_holder(std::vector<Holder>& holders, Pid pid) {
  for (Holder& h : holders) {
    if (h.process.pid == pid) return &h;
  }
  return nullptr;
}

// The holders to diagnose: gpuclean itself left out (a monitor of itself); a daemon's parent is
// init by design, so a recognised service is not an orphan.
std::vector<Holder> holders_of(Input& input) {
  std::vector<Holder> holders;
  for (Holder& h : input.holders) {
    if (input.self && h.process.pid == *input.self) continue;
    if (h.service && h.klass == HolderClass::kOrphan) h.klass = HolderClass::kActive;
    holders.push_back(std::move(h));
  }
  return holders;
}

// What NVML's lists say, spread over the holders.
struct Attribution {
  std::map<unsigned, std::map<Pid, Bytes>> listed;  // GPU → PID → figure
  std::set<Pid> listed_pids;
  MpsLeftovers mps;
  std::map<Pid, std::map<unsigned, Bytes>> dead;  // dead owners' entries: PID → GPU → bytes
};

// MPS clients (in NVML's MPS list, not a service themselves) and their server.
void mark_mps_clients(const std::set<Pid>& in_mps_list, std::vector<Holder>& holders,
                      MpsLeftovers& mps) {
  std::vector<const Holder*> servers;
  for (const Holder& h : holders) {
    if (h.visible && h.service == NodeService::kMpsServer) servers.push_back(&h);
  }
  for (Holder& h : holders) {
    if (h.service || in_mps_list.count(h.process.pid) == 0) continue;
    h.mps_client = true;
    h.mps_server = server_of(h, servers);
    if (has_live_thread(h.process)) mps.live_clients.insert(h.process.pid);
  }
}

// NVML's entries: to live holders directly; dead owners' entries collected per owner.
Attribution attribute(const GpuView& view, const Input& input, std::vector<Holder>& holders) {
  const std::set<Pid>& missing_pids = input.missing_pids;
  Attribution a;
  a.listed = listed_memory(view);
  const std::set<Pid> in_mps_list = mps_listed(view);
  mark_mps_clients(in_mps_list, holders, a.mps);
  for (const auto& [gpu, per_pid] : a.listed) {
    for (const auto& [pid, bytes] : per_pid) {
      a.listed_pids.insert(pid);
      if (Holder* h = find_holder(holders, pid)) {
        h->gpu_memory[gpu] = bytes;
      } else if (missing_pids.count(pid) > 0) {
        // A gone MPS client's memory is the server's to free, not an heir's: NVML's MPS list
        // says so even when the server is not recognised here (never hand it to an heir — the
        // weak rule would pick the MPS daemon).
        if (in_mps_list.count(pid) > 0) {
          a.mps.gone_clients[gpu][pid] = bytes;
        } else {
          a.dead[pid][gpu] = bytes;
        }
      } else if (input.handed_on_pids.count(pid) > 0) {
        a.dead[pid][gpu] = bytes;  // a dead owner whose PID another process has now
      }
    }
  }
  return a;
}

// Holders NVML does not list. A monitor needs positive evidence: a trusted tool or service
// (Holder::service) with no context. Anything else may hold what a dead owner left: a context
// shape makes an heir candidate; so does a holder of unmapped files, but only through its group
// or session (tie_heirs). Before, "no context" alone made a monitor, and a user's process that
// kept the files unmapped was skipped by every kill selector.
std::vector<const Holder*> heir_candidates(const std::set<Pid>& listed_pids,
                                           std::vector<Holder>& holders) {
  std::vector<const Holder*> candidates;
  for (Holder& h : holders) {
    if (listed_pids.count(h.process.pid) > 0) continue;
    if (h.service) {
      if (!looks_like_context(h) && is_plain_live(h)) h.klass = HolderClass::kMonitor;
      continue;  // a service's context is its own
    }
    if (h.klass != HolderClass::kZombieLeader && h.klass != HolderClass::kZombie) {
      candidates.push_back(&h);
    }
  }
  return candidates;
}

// A dead owner's memory passes to its heir; with no candidate at all it is foreign; with
// candidates but no heir it stays the dead owner's, reported with the candidates.
void apply_dead_owners(const std::vector<DeadOwner>& owners, std::vector<Holder>& holders) {
  for (const DeadOwner& owner : owners) {
    if (owner.heir) {
      Holder& heir = *find_holder(holders, *owner.heir);
      if (heir.klass == HolderClass::kActive || heir.klass == HolderClass::kOrphan) {
        heir.klass = HolderClass::kHeir;
      }
      heir.inherited_from = owner.pid;
      heir.heir = owner.candidates.front().evidence;
      heir.heir->pid_handed_on = owner.pid_handed_on;
      heir.gpu_memory = owner.gpu_memory;
    } else if (owner.candidates.empty()) {
      Holder foreign;
      foreign.process.pid = owner.pid;
      foreign.process.comm = "?";
      foreign.klass = HolderClass::kForeign;
      foreign.visible = false;
      foreign.pid_handed_on = owner.pid_handed_on;
      foreign.gpu_memory = owner.gpu_memory;
      holders.push_back(std::move(foreign));
    }
  }
}

// Per selected GPU: the used memory that visible holders, ambiguous dead owners and gone MPS
// clients explain, and the rest.
std::vector<GpuReport> gpu_reports(const GpuView& view, const Options& options,
                                   const std::vector<Holder>& holders,
                                   const std::vector<DeadOwner>& dead_owners,
                                   const MpsLeftovers& mps) {
  std::vector<GpuReport> reports;
  for (const Gpu& gpu : view.gpus) {
    if (!selected(options, gpu.index)) continue;
    GpuReport report;
    report.gpu = gpu;
    for (const Holder& h : holders) {
      if (!h.visible) continue;
      if (auto it = h.gpu_memory.find(gpu.index); it != h.gpu_memory.end()) {
        report.attributed += it->second;
      }
    }
    for (const DeadOwner& owner : dead_owners) {
      if (!owner.ambiguous) continue;
      if (auto it = owner.gpu_memory.find(gpu.index); it != owner.gpu_memory.end()) {
        report.attributed += it->second;
      }
    }
    if (auto it = mps.gone_clients.find(gpu.index); it != mps.gone_clients.end()) {
      for (const auto& entry : it->second) report.attributed += entry.second;
    }
    // Used unknown (a driver that gives no total, as i915 and xe): what the holders account
    // for is all there is, uncut, and nothing is unattributed.
    if (gpu.memory) {
      report.attributed = std::min(report.attributed, gpu.memory->used);
      report.unattributed = gpu.memory->used - report.attributed;
    }
    reports.push_back(std::move(report));
  }
  return reports;
}

// Whether a holder's problem is about it at all: not a monitor, not excused, not a node service
// at work, not a zombie NVML no longer counts memory for.
bool has_problem(const Options& options, const Holder& h) {
  return !(h.klass == HolderClass::kMonitor || excused(options, h) || service_at_work(h) ||
           (h.klass == HolderClass::kZombie && h.gpu_memory.empty()));
}

// The process trees among the holders: for each holder that `gpuclean kill ROOT` ends with its
// tree, the topmost holder ancestor ROOT whose problem it joins. A root is an orphan, heir,
// zombie-led or active holder (its fix is `gpuclean kill ROOT`); a member is active, or of its
// root's class (a server's workers, a leftover's children). A stuck, frozen, exiting or foreign
// holder keeps its own problem: its fix is not the root's kill. Only holders link a tree: a
// worker under a parent that holds nothing (a shell, say) is a root itself, since killing that
// parent's tree could end more than the GPU's holders. A link is a ppid whose holder started
// before the child: a reused PID never joins an unrelated holder's problem.
std::map<Pid, Pid> tree_roots(const std::vector<Holder>& holders, const Options& options) {
  const auto can_root = [](HolderClass c) {
    return c == HolderClass::kOrphan || c == HolderClass::kHeir ||
           c == HolderClass::kZombieLeader || c == HolderClass::kActive;
  };
  std::map<Pid, const Holder*> by_pid;
  for (const Holder& h : holders) {
    if (h.visible && has_problem(options, h) && can_root(h.klass)) by_pid[h.process.pid] = &h;
  }
  std::map<Pid, Pid> roots;
  for (const auto& [pid, holder] : by_pid) {
    std::optional<Pid> root;
    // Bounded by the holders: a ppid loop (a PID reused while the scan ran) cannot spin.
    const Holder* child = holder;
    for (std::size_t depth = 0; depth < by_pid.size(); ++depth) {
      const auto it = by_pid.find(child->process.ppid);
      if (it == by_pid.end() || it->first == pid) break;
      // A parent starts before its child. One that started later is another process that got
      // the dead parent's PID while the scan ran: no tree of this holder's.
      if (it->second->process.start_ticks > child->process.start_ticks) break;
      const HolderClass member = holder->klass;
      if (member == HolderClass::kActive || member == it->second->klass) root = it->first;
      child = it->second;
    }
    if (root) roots[pid] = *root;
  }
  return roots;
}

// "pid 100 (python3 serve.py)" → "pid 100 (python3 serve.py) and 3 descendants (101, 102,
// 103)": the members of its tree named in its problem's message, the first few PIDs of them.
void name_members(Problem& p, const std::string& root_label, const std::vector<Pid>& members) {
  if (members.empty()) return;
  constexpr std::size_t kNamed = 4;
  std::string pids;
  for (std::size_t i = 0; i < members.size() && i < kNamed; ++i) {
    pids += (i == 0 ? "" : ", ") + std::to_string(members[i]);
  }
  if (members.size() > kNamed) pids += ", …";
  const std::string text = " and " + std::to_string(members.size()) +
                           (members.size() == 1 ? " descendant (" : " descendants (") + pids + ")";
  const std::size_t at = p.message.find(root_label);
  if (at != std::string::npos) p.message.insert(at + root_label.size(), text);
  p.descendants = members;
}

// A root whose problem is a dead job's (its fix ends the whole tree, wherever it holds memory).
bool leftover_root(const Holder& root) {
  return root.klass == HolderClass::kOrphan || root.klass == HolderClass::kHeir ||
         root.klass == HolderClass::kZombieLeader;
}

// The GPUs a root's problems are on: its own, and those its tree's members hold memory on.
template <typename Members>
std::set<unsigned> tree_gpus(const Holder& root, const Members& members) {
  std::set<unsigned> gpus;
  for (const auto& entry : root.gpu_memory) gpus.insert(entry.first);
  for (auto it = members.lower_bound({root.process.pid, std::nullopt});
       it != members.end() && it->first.first == root.process.pid; ++it) {
    if (it->first.second) gpus.insert(*it->first.second);
  }
  return gpus;
}

// One problem per process tree (tree_roots) and GPU it holds memory on (a stray context's on
// the GPUs it strays to), each figure taken from the GPU's used memory so that they never add
// up to more. A member holding memory on a GPU where its root holds none has a problem of its
// own there. Returns the bytes so reported for holders this namespace cannot see (foreign), per
// GPU: they are part of the unattributed rest too, and must not be reported a second time
// (issue 13 item 11).
std::map<unsigned, Bytes> holder_problems(const std::vector<Holder>& holders,
                                          const Options& options,
                                          std::optional<UsedMemoryBudget>& budget,
                                          std::vector<Problem>& problems) {
  const std::map<Pid, Pid> roots = tree_roots(holders, options);
  std::map<Pid, const Holder*> by_pid;
  for (const Holder& h : holders) by_pid[h.process.pid] = &h;
  // Whether `h`'s memory on `gpu` (nullopt: its device files, without NVML) is counted in its
  // root's problem there; the members' bytes and PIDs each root's problem takes on.
  // A dead job's tree is one problem on every GPU it holds memory on (its fix ends all of it,
  // issue 47: a worker on a GPU its orphaned server does not use is no healthy job to wait
  // for); an active job's member joins only where the job works too.
  const auto joins_root = [&](const Holder& h, std::optional<unsigned> gpu) -> const Holder* {
    const auto it = roots.find(h.process.pid);
    if (it == roots.end()) return nullptr;
    const Holder& root = *by_pid.at(it->second);
    if (!gpu || leftover_root(root)) return &root;
    const bool root_holds = root.gpu_memory.count(*gpu) > 0;
    const bool stray =
        stray_context_gpus(root).count(*gpu) > 0 || stray_context_gpus(h).count(*gpu) > 0;
    return root_holds && !stray ? &root : nullptr;
  };
  // The first holder of each tree whose activity is sustained, by root.
  std::map<Pid, const Holder*> computing_member;
  for (const auto& [member, root] : roots) {
    const Holder& m = *by_pid.at(member);
    if (m.activity && m.activity->computing()) computing_member.emplace(root, &m);
  }
  std::map<std::pair<Pid, std::optional<unsigned>>, std::pair<Bytes, std::vector<Pid>>> members;
  for (const Holder& h : holders) {
    if (!has_problem(options, h)) continue;
    if (!budget) {
      if (const Holder* root = joins_root(h, std::nullopt)) {
        members[{root->process.pid, std::nullopt}].second.push_back(h.process.pid);
      }
      continue;
    }
    for (const auto& [gpu, bytes] : h.gpu_memory) {
      if (const Holder* root = selected(options, gpu) ? joins_root(h, gpu) : nullptr) {
        auto& member = members[{root->process.pid, gpu}];
        member.first += bytes;
        member.second.push_back(h.process.pid);
      }
    }
  }

  std::map<unsigned, Bytes> hidden_reported;
  for (const Holder& h : holders) {
    if (!has_problem(options, h)) continue;
    if (!budget) {
      if (joins_root(h, std::nullopt) != nullptr) continue;
      Problem p = holder_problem(h, std::nullopt, std::nullopt);
      if (auto it = members.find({h.process.pid, std::nullopt}); it != members.end()) {
        name_members(p, holder_label(h), it->second.second);
      }
      problems.push_back(std::move(p));
      continue;
    }
    bool reported = false;
    const std::set<unsigned> stray = stray_context_gpus(h);
    for (const unsigned gpu : tree_gpus(h, members)) {
      if (!selected(options, gpu)) continue;
      if (joins_root(h, gpu) != nullptr) {
        reported = true;
        continue;
      }
      const auto own = h.gpu_memory.find(gpu);
      const Bytes own_bytes = own != h.gpu_memory.end() ? own->second : 0;
      const auto tree = members.find({h.process.pid, gpu});
      const Bytes bytes = own_bytes + (tree != members.end() ? tree->second.first : 0);
      const auto [shown, note] = budget->take(gpu, bytes);
      if (!h.visible) hidden_reported[gpu] += shown;
      Problem p = stray.count(gpu) > 0 ? stray_problem(h, gpu, shown, stray, options)
                                       : holder_problem(h, gpu, shown);
      if (tree != members.end()) name_members(p, holder_label(h), tree->second.second);
      if (auto m = computing_member.find(h.process.pid);
          m != computing_member.end() && leftover_root(h)) {
        member_computing(h, *m->second, p);
      }
      p.message += note;
      p.bytes = shown;
      problems.push_back(std::move(p));
      reported = true;
    }
    // A context shape with no memory anywhere is still worth a line when no GPU is excluded.
    if (!reported && h.gpu_memory.empty() && !options.gpus && h.klass != HolderClass::kActive) {
      problems.push_back(holder_problem(h, std::nullopt, std::nullopt));
    }
  }
  return hidden_reported;
}

// Dead owners whose heir is ambiguous, unless every candidate is excused (ignored or of an
// allowed user).
void ambiguous_owner_problems(const std::vector<DeadOwner>& owners, std::vector<Holder>& holders,
                              const Options& options, UsedMemoryBudget& budget,
                              std::vector<Problem>& problems) {
  for (const DeadOwner& owner : owners) {
    if (!owner.ambiguous || options.ignore_pids.count(owner.pid) > 0) continue;
    const bool all_excused = std::all_of(owner.candidates.begin(), owner.candidates.end(),
                                         [&](const DeadOwner::Candidate& c) {
                                           const Holder* h = find_holder(holders, c.pid);
                                           return h != nullptr && excused(options, *h);
                                         });
    if (all_excused) continue;
    for (const auto& [gpu, bytes] : owner.gpu_memory) {
      if (!selected(options, gpu)) continue;
      const auto [shown, note] = budget.take(gpu, bytes);
      problems.push_back(ambiguous_problem(owner, gpu, shown, note));
    }
  }
}

// The used memory no visible process accounts for, beyond what was named above for foreign
// holders, when it is more than options.max_unattributed.
void unattributed_problems(const std::vector<GpuReport>& reports,
                           std::map<unsigned, Bytes>& hidden_reported, const Options& options,
                           std::vector<Problem>& problems) {
  for (const GpuReport& report : reports) {
    const Bytes hidden = std::min(hidden_reported[report.gpu.index], report.unattributed);
    const Bytes rest = report.unattributed - hidden;
    if (rest <= options.max_unattributed) continue;
    Problem p;
    p.kind = ProblemKind::kUnattributed;
    p.gpu = report.gpu.index;
    p.bytes = rest;
    p.message = "GPU " + std::to_string(report.gpu.index) + ": " + format_bytes(rest) +
                " used that no visible process accounts for" +
                (hidden > 0 ? " beyond the " + format_bytes(hidden) + " named above" : "") +
                " (a holder in another PID namespace or container, or memory the driver has not "
                "released yet)";
    const std::string reset = report.gpu.source == Gpu::Source::kDrm
                                  ? "a reset of the GPU by its driver (" + report.gpu.driver +
                                        ", " + report.gpu.pci_bus_id + ")"
                                  : "a GPU reset (gpuclean reset --gpus " +
                                        std::to_string(report.gpu.index) +
                                        " shows what stands in its way)";
    p.fix = "run gpuclean on the host (outside containers); if nothing holds it there, only " +
            reset + " or a reboot frees it";
    problems.push_back(std::move(p));
  }
}

// The device-local memory (VRAM) a holder's DRM clients hold, summed; 0 when none names any.
Bytes drm_vram(const Holder& h) {
  Bytes total = 0;
  for (const HeldFile& f : h.devices) {
    for (const DrmClient& c : f.drm_clients) total += c.vram.value_or(0);
  }
  return total;
}

// A display server or console: it holds only primary DRM nodes (/dev/dri/cardN) of AMD or
// Intel GPUs, never a render node or /dev/kfd. Its memory (scan-out buffers) is accounted, but
// holding it is its job: a monitor, never a problem. The primary node can allocate device
// memory too, so the holder must also look like a display by what it holds (issue 48 item 6:
// before, an orphan with 60 GiB through card0 was a monitor and the GPU CLEAN): no device-local
// memory at all, or a live (not orphaned) process with no more than a display's share
// (kDisplayMemoryMax). A stuck, frozen or zombie-led one keeps its class.
void mark_displays(std::vector<Holder>& holders) {
  for (Holder& h : holders) {
    const bool display_only =
        !h.devices.empty() && std::all_of(h.devices.begin(), h.devices.end(), [](const auto& f) {
          return f.drm && f.drm->kind == DrmNode::Kind::kPrimary;
        });
    if (!display_only || !h.visible || !is_plain_live(h)) continue;
    const Bytes vram = drm_vram(h);
    const bool display_sized =
        vram == 0 || (h.klass == HolderClass::kActive && vram <= kDisplayMemoryMax);
    if (display_sized) h.klass = HolderClass::kMonitor;
  }
}

// "gpuclean kill --leftovers --yes" where two or more leftover trees (problems of a kind
// --leftovers takes, not still computing) can be ended at once; the GPU selection goes with it.
std::string leftovers_fix(const std::vector<Problem>& problems, const Options& options) {
  std::set<Pid> roots;
  for (const Problem& p : problems) {
    const bool leftover = p.kind == ProblemKind::kOrphan || p.kind == ProblemKind::kHeir ||
                          p.kind == ProblemKind::kZombieLeader;
    if (leftover && !p.computing && p.pid) roots.insert(*p.pid);
  }
  if (roots.size() < 2) return "";
  std::string gpus;
  for (const unsigned gpu : options.gpus.value_or(std::set<unsigned>{})) {
    gpus += (gpus.empty() ? " --gpus " : ",") + std::to_string(gpu);
  }
  return "gpuclean kill --leftovers" + gpus + " --yes";
}

}  // namespace

Diagnosis diagnose(Input input, const Options& options) {
  Diagnosis out;
  std::vector<Holder> holders = holders_of(input);
  mark_displays(holders);
  Attribution attribution;
  if (input.gpu_view) {
    attribution = attribute(*input.gpu_view, input, holders);
    out.dead_owners =
        tie_heirs(attribution.dead, heir_candidates(attribution.listed_pids, holders));
    for (DeadOwner& owner : out.dead_owners) {
      owner.pid_handed_on = input.handed_on_pids.count(owner.pid) > 0;
    }
    apply_dead_owners(out.dead_owners, holders);
    assign_activity(*input.gpu_view, input.activity_history, holders);
    out.gpus = gpu_reports(*input.gpu_view, options, holders, out.dead_owners, attribution.mps);
  } else {
    // Without NVML: a trusted tool with no context shape is a monitor, as above.
    for (Holder& h : holders) {
      if (h.service && is_plain_live(h) && !looks_like_context(h)) h.klass = HolderClass::kMonitor;
    }
  }
  std::sort(holders.begin(), holders.end(), [](const Holder& a, const Holder& b) {
    if (a.visible != b.visible) return a.visible;
    return a.process.pid < b.process.pid;
  });

  std::optional<UsedMemoryBudget> budget;
  if (input.gpu_view) budget.emplace(*input.gpu_view, attribution.listed);
  std::map<unsigned, Bytes> hidden_reported =
      holder_problems(holders, options, budget, out.problems);
  if (budget) {
    ambiguous_owner_problems(out.dead_owners, holders, options, *budget, out.problems);
    mps_problems(holders, attribution.mps, options, *budget, out.problems);
  }
  unattributed_problems(out.gpus, hidden_reported, options, out.problems);
  out.leftovers_fix = leftovers_fix(out.problems, options);
  out.holders = std::move(holders);
  out.clean = !has_error(out.problems);
  return out;
}

std::map<ProcessIdentity, BusyLook> activity_to_settle(const Diagnosis& diagnosis) {
  std::map<Pid, const Holder*> by_pid;
  for (const Holder& h : diagnosis.holders) by_pid[h.process.pid] = &h;
  std::vector<const Holder*> judged;
  for (const Problem& p : diagnosis.problems) {
    if (p.kind != ProblemKind::kOrphan || !p.pid) continue;
    for (const Pid pid : p.descendants) {
      if (auto h = by_pid.find(pid); h != by_pid.end()) judged.push_back(h->second);
    }
    if (auto h = by_pid.find(*p.pid); h != by_pid.end()) judged.push_back(h->second);
  }
  return unsettled(judged);
}

}  // namespace gpuclean::diagnose
