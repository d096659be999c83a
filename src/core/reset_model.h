// What stands between a GPU and a reset (issue 53): `gpuclean reset --plan`'s model. Per GPU,
// everything that keeps `nvidia-smi --gpu-reset -i N` from working ("In use by another
// client"), in the order it must get out of the way, each with how; the command; what is
// checked afterwards. diagnose/reset_plan.h makes it from a diagnosis and the node's facts
// (procfs/reset_facts.h); output/reset_view.h prints it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace gpuclean {

// What the node says beyond the diagnosis, for a reset (procfs/reset_facts.h reads it).
struct ResetFacts {
  bool root = false;                // the caller can reset (nvidia-smi -r needs root)
  bool drm_loaded = false;          // the nvidia_drm module is loaded (/sys/module/nvidia_drm)
  std::optional<bool> drm_modeset;  // /sys/module/nvidia_drm/parameters/modeset
  std::vector<std::string>
      nvswitches;  // NVSwitch PCI addresses (/sys/bus/pci/drivers/nvidia-nvswitch)
  // Per GPU PCI address (NVML's form, "00000000:3B:00.0"): the kernel driver it is bound to
  // ("nvidia", "vfio-pci"), where sysfs says.
  std::vector<std::pair<std::string, std::string>> drivers;
};

struct ResetBlocker {
  enum class Kind {
    kLeftover,         // a leftover and its dead job's processes: killed first, verified
    kActiveJob,        // a job at work: the reset is refused unless --force (then killed)
    kUnreadable,       // a holder gpuclean cannot see or signal here (another namespace)
    kService,          // one of the node's GPU services: stopped, started again after
    kPersistenceMode,  // persistence mode on with no persistenced to stop
    kMig,              // MIG mode on: its instances first
    kDisplay,          // nvidia-drm loaded: it holds the GPU with no process to show
    kNvlinkDomain,     // an NVSwitch system without Fabric Manager: the GPUs are reset together
    kVfio,             // bound to vfio-pci: a VM's, not the NVIDIA driver's
    kNotRoot,          // the reset needs root
  };
  // (Each with its initializer: GCC's -Wmissing-field-initializers asks for them in designated
  // initializers that leave a member out.)
  Kind kind = Kind::kLeftover;
  std::vector<Pid> pids = {};  // the processes it is about (a dead job's root first)
  std::string what = {};       // one line, escaped
  std::string how = {};        // how it gets out of the way: the command or the step
  std::string unit = {};       // kService: its systemd unit, where its cgroup says
  // It stops the reset: kActiveJob until --force; kUnreadable, kMig, kVfio, kNotRoot and a
  // service without a unit always (a person's step). The rest `--yes` clears itself.
  bool refuses = false;
};

struct GpuResetPlan {
  unsigned gpu = 0;
  std::string uuid;
  std::string pci_bus_id;
  std::vector<ResetBlocker> blockers;  // in the order they are cleared
  // The GPUs reset with it (an NVSwitch system: all of them), itself included.
  std::vector<unsigned> reset_together;
  std::string command;              // "nvidia-smi --gpu-reset -i 3"
  std::vector<std::string> checks;  // what is verified after
};

const char* to_string(ResetBlocker::Kind kind);  // "leftover", "active-job", …

struct ResetPlan {
  std::vector<GpuResetPlan> gpus;
  bool force = false;
  // Nothing refuses: `--yes` would carry it out.
  [[nodiscard]] bool runnable() const {
    for (const GpuResetPlan& gpu : gpus) {
      for (const ResetBlocker& b : gpu.blockers) {
        if (b.refuses) return false;
      }
    }
    return !gpus.empty();
  }
};

}  // namespace gpuclean
