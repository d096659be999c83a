// Gathering the inputs of a diagnosis: the device files, the /proc holder scan and the NVML
// view (queried on a second thread while /proc is scanned: NVML's init alone takes ~20 ms on
// an H200, as long as the whole scan), then everything /proc says about each holder.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "cli/common.h"
#include "diagnose/diagnosis.h"
#include "nvml/gpu_source.h"
#include "procfs/holder_scan.h"
#include "procfs/proc_fs.h"

namespace gpuclean::cli {

struct Gathered {
  diagnose::Input input;
  std::vector<DeviceFile> files;
  ScanStats stats;
  // "present", "absent" (no driver/library), "disabled" (--no-nvml), "failed"
  std::string nvml_state = "disabled";
  std::string nvml_message;
};

// Errors: a bad device selection (exit 2) or an unreadable /proc (exit 3); `exit_code` says
// which. An NVML failure is not an error here: nvml_state says so and the caller decides.
struct GatherError {
  int exit_code = kExitRuntime;
  std::string message;
};

// The files to scan: `paths` and --device-glob patterns (each must match something), or the
// NVIDIA defaults when both are empty. Errors are usage errors.
Result<std::vector<DeviceFile>> select_device_files(const CommonOptions& options,
                                                    const std::vector<std::string>& paths = {});

// Everything /proc says about each holder the scan found, classified from /proc alone.
// Holders that exited since the scan are counted in scan.stats.vanished and left out.
std::vector<Holder> read_holders(const procfs::ProcFs& proc, procfs::HolderScan& scan);

// Runs the scan and the NVML query. `test_gpu_source` (hidden flag) replaces NVML.
std::variant<Gathered, GatherError> gather(const CommonOptions& options);

// "0,2", "0-3", "all" → indices; nullopt for "all". Errors name the bad part.
Result<std::optional<std::set<unsigned>>> parse_gpu_list(const std::string& text);

}  // namespace gpuclean::cli
