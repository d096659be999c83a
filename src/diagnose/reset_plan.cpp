#include "diagnose/reset_plan.h"

#include <algorithm>

#include "core/escape.h"
#include "core/units.h"

namespace gpuclean::diagnose {

namespace {

// Whether `h` holds GPU `gpu`: memory NVML counts on it, or its device file open.
bool holds(const Holder& h, const Gpu& gpu) {
  if (h.gpu_memory.count(gpu.index) > 0) return true;
  return gpu.minor && std::any_of(h.devices.begin(), h.devices.end(), [&gpu](const HeldFile& f) {
           return f.nvidia_minor == gpu.minor;
         });
}

// "pid 4242 python3 serve.py (alice, orphan)"; escaped.
std::string holder_text(const Holder& h) {
  const ProcessInfo& p = h.process;
  return "pid " + std::to_string(p.pid) + " " +
         (p.cmdline.empty() ? bracketed_name(p.comm) : display_argv(p.cmdline, 60)) + " (" +
         escape_terminal(p.user.empty() ? "?" : p.user) + ", " + to_string(h.klass) + ")";
}

// The systemd service a holder runs in, where its cgroup says so: "nvidia-dcgm.service".
std::string service_unit(const Holder& h) {
  const std::optional<Owner>& owner = h.process.owner;
  if (!owner) return "";
  std::string unit =
      owner->kind == Owner::Kind::kSystemdUnit ? owner->id : owner->unit.value_or("");
  return unit.ends_with(".service") ? unit : "";
}

// A process of the node's own rather than a user's: a recognised GPU service, or root's in a
// systemd service (gpuclean's recorder and metrics, a monitoring agent).
bool is_node_service(const Holder& h) {
  return h.service.has_value() || (h.process.uid == Uid{0} && !service_unit(h).empty());
}

ResetBlocker process_blocker(const Diagnosis& d, const Holder& h, const ResetOptions& o) {
  ResetBlocker b;
  b.pids = {h.process.pid};
  b.what = holder_text(h);
  const std::string pid = std::to_string(h.process.pid);
  if (!h.visible) {
    b.kind = ResetBlocker::Kind::kUnreadable;
    b.what = "pid " + pid + ", in another PID namespace or container (" + to_string(h.klass) + ")";
    b.how = "end it where it runs (gpuclean status in its container or on its host)";
    b.refuses = true;
    return b;
  }
  if (h.klass == HolderClass::kStuck) {
    b.kind = ResetBlocker::Kind::kUnreadable;
    b.how =
        "reboot: it is in uninterruptible sleep, signals do not end it, and the reset waits "
        "for it";
    b.refuses = true;
    return b;
  }
  const bool leftover = h.klass == HolderClass::kOrphan || h.klass == HolderClass::kHeir ||
                        h.klass == HolderClass::kZombieLeader;
  if (leftover) {
    b.kind = ResetBlocker::Kind::kLeftover;
    for (const Problem& p : d.problems) {
      if (p.pid == h.process.pid) {
        for (Pid member : p.descendants) {
          if (std::find(b.pids.begin(), b.pids.end(), member) == b.pids.end()) {
            b.pids.push_back(member);
          }
        }
      }
    }
    if (b.pids.size() > 1) b.what += " and " + std::to_string(b.pids.size() - 1) + " of its job";
    b.how = "killed with its job, verified (gpuclean kill " + pid + ")";
    return b;
  }
  b.kind = ResetBlocker::Kind::kActiveJob;
  b.how = o.force ? "killed with its tree (--force), verified (gpuclean kill " + pid + ")"
                  : "a job at work: the reset is refused (end it, or --force ends it)";
  b.refuses = !o.force;
  return b;
}

ResetBlocker service_blocker(const Holder& h) {
  ResetBlocker b;
  b.kind = ResetBlocker::Kind::kService;
  b.pids = {h.process.pid};
  b.unit = service_unit(h);
  b.what = (h.service ? std::string(to_string(*h.service)) + " " : std::string("service ")) +
           holder_text(h);
  if (!b.unit.empty()) {
    b.how = "systemctl stop " + escape_terminal(b.unit) + ", started again after";
  } else if (h.service == NodeService::kMpsControl || h.service == NodeService::kMpsServer) {
    // MPS's own way down: the control daemon ends its servers with it.
    b.how = "echo quit | nvidia-cuda-mps-control (it ends its servers); started again after";
  } else {
    b.how = "stop it by hand: no systemd unit runs it (its cgroup names none)";
    b.refuses = true;
  }
  return b;
}

// The GPU's own state: persistence mode, MIG, its driver binding.
void gpu_blockers(const Gpu& gpu, const ResetFacts& facts, bool persistenced_stopped,
                  std::vector<ResetBlocker>& out) {
  const std::string i = std::to_string(gpu.index);
  if (gpu.persistence_mode.value_or(false) && !persistenced_stopped) {
    out.push_back({.kind = ResetBlocker::Kind::kPersistenceMode,
                   .what = "persistence mode is on, and no nvidia-persistenced holds it here",
                   .how = "nvidia-smi -pm 0 -i " + i + ", and -pm 1 again after"});
  }
  if (gpu.mig_enabled.value_or(false)) {
    out.push_back({.kind = ResetBlocker::Kind::kMig,
                   .what = "MIG mode is on: its GPU and compute instances use the GPU",
                   .how = "destroy them first (nvidia-smi mig -dci -i " + i +
                          "; nvidia-smi mig -dgi -i " + i + ") and make them again after",
                   .refuses = true});
  }
  for (const auto& [address, driver] : facts.drivers) {
    if (address == gpu.pci_bus_id && driver == "vfio-pci") {
      out.push_back({.kind = ResetBlocker::Kind::kVfio,
                     .what = "bound to vfio-pci (passed through to a virtual machine)",
                     .how = "not the NVIDIA driver's to reset: the VM's host resets it",
                     .refuses = true});
    }
  }
}

GpuResetPlan plan_gpu(const Diagnosis& d, const GpuReport& report, const ResetFacts& facts,
                      const ResetOptions& o, const std::vector<unsigned>& together) {
  const Gpu& gpu = report.gpu;
  GpuResetPlan plan;
  plan.gpu = gpu.index;
  plan.uuid = gpu.uuid;
  plan.pci_bus_id = gpu.pci_bus_id;
  plan.reset_together = together;
  std::vector<ResetBlocker> services;
  bool persistenced = false;
  for (const Holder& h : d.holders) {
    if (!holds(h, gpu)) continue;
    // Fabric Manager stays: on an Ampere NVSwitch system a single GPU's reset needs it running
    // (nvidia-smi(1), --gpu-reset); without it the NVLink peers are reset together (below).
    if (h.service == NodeService::kFabricManager) continue;
    if (is_node_service(h)) {
      services.push_back(service_blocker(h));
      persistenced = persistenced || h.service == NodeService::kPersistenced;
      continue;
    }
    // A dead job's member is ended with its root (the root's blocker names it).
    if (const auto root = dead_job_root(d, h.process.pid); root && *root != h.process.pid) continue;
    plan.blockers.push_back(process_blocker(d, h, o));
  }
  plan.blockers.insert(plan.blockers.end(), services.begin(), services.end());
  gpu_blockers(gpu, facts, persistenced, plan.blockers);
  if (facts.drm_loaded) {
    // With nvidia_drm loaded the reset fails "In use by another client" with no process to
    // show (NVIDIA/mig-parted#181): docs/facts.md, "Resetting a GPU".
    plan.blockers.push_back(
        {.kind = ResetBlocker::Kind::kDisplay,
         .what = std::string("the nvidia_drm module is loaded") +
                 (facts.drm_modeset.value_or(false) ? " with modeset=1" : "") +
                 ": it holds the GPUs without a process of its own",
         .how = "stop the display manager, modprobe -r nvidia_drm, and load it again after (a "
                "console on it keeps it: then reboot)"});
  }
  if (together.size() > 1) {
    std::string gpus;
    for (unsigned g : together) gpus += (gpus.empty() ? "" : ", ") + std::to_string(g);
    plan.blockers.push_back(
        {.kind = ResetBlocker::Kind::kNvlinkDomain,
         .what = "an NVSwitch system (" + std::to_string(facts.nvswitches.size()) +
                 " NVSwitches) without Fabric Manager running: its GPUs are reset together, "
                 "GPUs " +
                 gpus,
         .how = "every GPU of the domain is cleared as this one is, then reset at once"});
  }
  if (!facts.root) {
    plan.blockers.push_back({.kind = ResetBlocker::Kind::kNotRoot,
                             .what = "not root",
                             .how = "run as root: nvidia-smi resets a GPU for root only",
                             .refuses = true});
  }
  plan.command = together.size() > 1 ? "nvidia-smi --gpu-reset"
                                     : "nvidia-smi --gpu-reset -i " + std::to_string(gpu.index);
  const Bytes baseline = gpu.memory ? gpu.memory->reserved.value_or(0) : 0;
  plan.checks = {"NVML answers for GPU " + std::to_string(gpu.index) + " (" + gpu.uuid + ")",
                 "its used memory is back at its idle level (" + format_bytes(baseline) +
                     " reserved by the driver, or under 256 MiB used)",
                 "no new Xid for its PCI address " + gpu.pci_bus_id + " in the kernel log"};
  return plan;
}

}  // namespace

ResetPlan plan_reset(const Diagnosis& d, const ResetFacts& facts, const ResetOptions& o) {
  ResetPlan plan;
  plan.force = o.force;
  // On an NVSwitch system without Fabric Manager every GPU is reset with the others (its
  // NVLink peers: gpuclean does not read the topology, so all of them): all are planned.
  std::vector<unsigned> together;
  const bool fabric_manager = std::any_of(d.holders.begin(), d.holders.end(), [](const Holder& h) {
    return h.service == NodeService::kFabricManager;
  });
  if (!facts.nvswitches.empty() && !fabric_manager) {
    for (const GpuReport& r : d.gpus) together.push_back(r.gpu.index);
  }
  for (const GpuReport& report : d.gpus) {
    const bool asked = o.gpus.empty() || o.gpus.count(report.gpu.index) > 0;
    if (!asked && together.empty()) continue;
    plan.gpus.push_back(plan_gpu(d, report, facts, o, together));
  }
  return plan;
}

}  // namespace gpuclean::diagnose
