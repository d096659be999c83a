#include "diagnose/diagnosis.h"

#include <algorithm>

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
  if (!is_nvidia_file(file)) return true;
  return file.mapped &&
         (file.nvidia_minor.has_value() || file.path.rfind("/dev/nvidia-uvm", 0) == 0) &&
         file.path != "/dev/nvidia-uvm-tools";
}

std::string holder_label(const Holder& h) {
  return "pid " + std::to_string(h.process.pid) + " (" + short_name(h.process) + ")";
}

const ThreadInfo* stuck_thread(const ProcessInfo& p) {
  for (const ThreadInfo& t : p.threads) {
    if (t.state == 'D') return &t;
  }
  return nullptr;
}

const ThreadInfo* live_thread(const ProcessInfo& p) {
  for (const ThreadInfo& t : p.threads) {
    if (t.state != 'Z' && t.state != 'X') return &t;
  }
  return nullptr;
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
      p.kind = "stuck";
      p.message = where + amount + "stuck " + label + ": thread " +
                  std::to_string(t != nullptr ? t->tid : h.process.pid) +
                  " is in uninterruptible sleep (D" +
                  (t != nullptr && !t->wchan.empty() ? ", in " + t->wchan : "") +
                  "); signals will not free it";
      p.fix = gpu ? "only a GPU reset (nvidia-smi -r -i " + std::to_string(*gpu) +
                        ", once nothing else uses that GPU) or a reboot frees this"
                  : "only a GPU reset or a reboot frees this";
      return p;
    }
    case HolderClass::kZombieLeader: {
      const ThreadInfo* t = live_thread(h.process);
      p.kind = "zombie-leader";
      p.message = where + amount + "zombie-led " + label + ": its main thread exited, thread " +
                  std::to_string(t != nullptr ? t->tid : h.process.pid) +
                  " keeps the files (invisible to fuser and lsof)";
      // SIGKILL to the leader's PID ends the whole group (FACTS.md); gpuclean kill escalates
      // to it and verifies.
      p.fix = "gpuclean kill " + pid;
      return p;
    }
    case HolderClass::kHeir:
      p.kind = "heir";
      p.message = where + amount + "heir " + label + ": it inherited the CUDA context of pid " +
                  std::to_string(h.inherited_from.value_or(0)) +
                  ", which is gone (nvidia-smi shows that pid as [Not Found])";
      p.fix = "gpuclean kill " + pid;
      return p;
    case HolderClass::kOrphan:
      p.kind = "orphan";
      p.message = where + amount + "orphan " + label + ": its parent is gone";
      p.fix = "gpuclean kill " + pid;
      return p;
    case HolderClass::kForeign:
      p.kind = "foreign";
      p.message = where + amount + "pid " + pid +
                  ", which this PID namespace cannot see (a container, or a process on the host "
                  "when gpuclean runs in one)";
      p.fix =
          "run gpuclean in the host's PID namespace (e.g. nsenter -t 1 -p -m gpuclean) or "
          "look in the other containers on this node";
      return p;
    case HolderClass::kZombie:
      // It has exited but NVML still counts its memory: the driver is tearing the context
      // down (FACTS.md: ~0.12–0.16 s after SIGKILL). Not clean until that is done.
      p.kind = "exiting";
      p.message = where + (bytes ? format_bytes(*bytes) : std::string("memory")) +
                  " still counted for " + label + ", which has exited; the driver is releasing it";
      p.fix = "wait for the release (gpuclean wait)";
      return p;
    case HolderClass::kActive:
    case HolderClass::kMonitor:
      break;
  }
  p.kind = bytes ? "in-use" : "holder";
  p.message = where + (bytes ? format_bytes(*bytes) + " in use by " : "device files held by ") +
              label + (h.process.user.empty() ? "" : ", user " + h.process.user);
  p.fix = "wait for it (gpuclean wait) or stop it: gpuclean kill " + pid;
  return p;
}

bool selected(const Options& options, unsigned gpu) {
  return !options.gpus || options.gpus->count(gpu) > 0;
}

bool excused(const Options& options, const Holder& h) {
  return options.ignore_pids.count(h.process.pid) > 0 ||
         (!h.process.user.empty() && options.allow_users.count(h.process.user) > 0);
}

// The dead owner a heir most likely forked from: the nearest lower PID among the dead owners
// on that GPU (a child's PID is usually above its parent's), else the lowest.
std::optional<Pid> likely_owner(Pid heir, const std::vector<Pid>& dead_owners) {
  std::optional<Pid> best;
  for (Pid owner : dead_owners) {
    if (owner < heir && (!best || owner > *best)) best = owner;
  }
  if (!best && !dead_owners.empty())
    best = *std::min_element(dead_owners.begin(), dead_owners.end());
  return best;
}

}  // namespace

bool looks_like_context(const Holder& holder) {
  return std::any_of(holder.devices.begin(), holder.devices.end(), holds_like_context);
}

std::string short_name(const ProcessInfo& process) {
  if (!process.cmdline.empty() && !process.cmdline[0].empty()) {
    const std::string& arg0 = process.cmdline[0];
    const std::size_t slash = arg0.rfind('/');
    std::string name = slash == std::string::npos ? arg0 : arg0.substr(slash + 1);
    if (!name.empty()) return name;
  }
  return process.comm;
}

Diagnosis diagnose(Input input, const Options& options) {
  Diagnosis out;
  std::vector<Holder> holders;
  for (Holder& h : input.holders) {
    if (input.self && h.process.pid == *input.self) continue;  // gpuclean is a monitor of itself
    holders.push_back(std::move(h));
  }
  auto find_holder = [&holders](Pid pid) -> Holder* {
    for (Holder& h : holders) {
      if (h.process.pid == pid) return &h;
    }
    return nullptr;
  };

  if (input.gpu_view) {
    // NVML's entries: to live holders directly; dead owners' entries collected per GPU.
    std::set<Pid> listed;
    std::map<unsigned, std::vector<std::pair<Pid, Bytes>>> dead_entries;
    for (const Gpu& gpu : input.gpu_view->gpus) {
      for (const GpuProcess& p : gpu.processes) {
        const Bytes bytes = p.used_memory.value_or(0);
        listed.insert(p.pid);
        if (Holder* h = find_holder(p.pid)) {
          h->gpu_memory[gpu.index] += bytes;
        } else if (input.missing_pids.count(p.pid) > 0) {
          dead_entries[gpu.index].emplace_back(p.pid, bytes);
        }
      }
    }
    // Holders NVML does not list: a context shape means an heir of a dead owner (or a stray
    // context); anything else is a monitor (nvidia-smi, DCGM, persistenced).
    std::vector<Holder*> heir_candidates;
    for (Holder& h : holders) {
      if (listed.count(h.process.pid) > 0) continue;
      if (looks_like_context(h) && h.klass != HolderClass::kZombieLeader) {
        heir_candidates.push_back(&h);
      } else if (h.klass == HolderClass::kActive || h.klass == HolderClass::kOrphan) {
        h.klass = HolderClass::kMonitor;
      }
    }
    // Each dead owner's memory passes to its heir; with no heir it is foreign.
    for (auto& [gpu, entries] : dead_entries) {
      std::vector<Pid> owners;
      for (const auto& entry : entries) owners.push_back(entry.first);
      std::map<Pid, Holder*> heir_of;
      for (Holder* candidate : heir_candidates) {
        if (auto owner = likely_owner(candidate->process.pid, owners)) {
          if (heir_of.count(*owner) == 0) heir_of[*owner] = candidate;
        }
      }
      for (const auto& [owner, bytes] : entries) {
        if (auto it = heir_of.find(owner); it != heir_of.end()) {
          Holder& heir = *it->second;
          if (heir.klass == HolderClass::kActive || heir.klass == HolderClass::kOrphan) {
            heir.klass = HolderClass::kHeir;
          }
          heir.inherited_from = owner;
          heir.gpu_memory[gpu] += bytes;
        } else {
          Holder foreign;
          foreign.process.pid = owner;
          foreign.process.comm = "?";
          foreign.klass = HolderClass::kForeign;
          foreign.visible = false;
          foreign.gpu_memory[gpu] = bytes;
          holders.push_back(std::move(foreign));
        }
      }
    }

    for (const Gpu& gpu : input.gpu_view->gpus) {
      if (!selected(options, gpu.index)) continue;
      GpuReport report;
      report.gpu = gpu;
      for (const Holder& h : holders) {
        if (!h.visible) continue;
        if (auto it = h.gpu_memory.find(gpu.index); it != h.gpu_memory.end()) {
          report.attributed += it->second;
        }
      }
      const Bytes used = gpu.memory ? gpu.memory->used : 0;
      report.attributed = std::min(report.attributed, used);
      report.unattributed = used - report.attributed;
      out.gpus.push_back(std::move(report));
    }
  }

  if (!input.gpu_view) {
    // Without NVML the context shape is all there is to tell a monitor from a user.
    for (Holder& h : holders) {
      if ((h.klass == HolderClass::kActive || h.klass == HolderClass::kOrphan) &&
          !looks_like_context(h)) {
        h.klass = HolderClass::kMonitor;
      }
    }
  }

  std::sort(holders.begin(), holders.end(), [](const Holder& a, const Holder& b) {
    if (a.visible != b.visible) return a.visible;
    return a.process.pid < b.process.pid;
  });

  for (const Holder& h : holders) {
    // A zombie matters only while NVML still counts memory for it.
    if (h.klass == HolderClass::kMonitor || excused(options, h) ||
        (h.klass == HolderClass::kZombie && h.gpu_memory.empty())) {
      continue;
    }
    if (!input.gpu_view) {
      out.problems.push_back(holder_problem(h, std::nullopt, std::nullopt));
      continue;
    }
    bool reported = false;
    for (const auto& [gpu, bytes] : h.gpu_memory) {
      if (!selected(options, gpu)) continue;
      out.problems.push_back(holder_problem(h, gpu, bytes));
      reported = true;
    }
    // A context shape with no memory anywhere is still worth a line when no GPU is excluded.
    if (!reported && h.gpu_memory.empty() && !options.gpus && h.klass != HolderClass::kActive) {
      out.problems.push_back(holder_problem(h, std::nullopt, std::nullopt));
    }
  }
  for (const GpuReport& report : out.gpus) {
    if (report.unattributed <= options.max_unattributed) continue;
    Problem p;
    p.kind = "unattributed";
    p.gpu = report.gpu.index;
    p.message = "GPU " + std::to_string(report.gpu.index) + ": " +
                format_bytes(report.unattributed) +
                " used that no visible process accounts for (a holder in another PID namespace or "
                "container, or memory the driver has not released yet)";
    p.fix =
        "run gpuclean on the host (outside containers); if nothing holds it there, only a GPU "
        "reset (nvidia-smi -r -i " +
        std::to_string(report.gpu.index) + ") or a reboot frees it";
    out.problems.push_back(std::move(p));
  }
  out.holders = std::move(holders);
  out.clean = out.problems.empty();
  return out;
}

}  // namespace gpuclean::diagnose
