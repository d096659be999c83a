// Gathering the inputs of a diagnosis: the device files, the /proc holder scan and the NVML
// view (queried on a second thread while /proc is scanned: NVML's init alone takes ~20 ms on
// an H200, as long as the whole scan), then everything /proc says about each holder.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/duration.h"
#include "diagnose/diagnosis.h"
#include "diagnose/unseen.h"
#include "nvml/gpu_source.h"
#include "procfs/drm_devices.h"
#include "procfs/holder_scan.h"
#include "procfs/proc_fs.h"

namespace gpuclean::procfs {
class RollingScan;
}  // namespace gpuclean::procfs

namespace gpuclean::collect {

class GpuSampler;

// What a collection reads: the device files, /proc and NVML, and how.
struct CollectOptions {
  std::vector<std::string> device_globs;  // empty: docs/reference.md's NVIDIA defaults
  bool no_nvml = false;
  // Never look at AMD or Intel GPUs (sysfs's DRM devices and their clients' fdinfo): --no-drm.
  bool no_drm = false;
  procfs::DrmRoots drm_roots;       // test builds point them at fixture trees
  unsigned threads = 0;             // 0: one per core, at most 16
  std::string proc_root = "/proc";  // test builds point it at fixture trees
  std::string test_gpu_source;      // test builds: a JSON GPU view instead of NVML
  // How long one NVML answer may take when NVML is asked through its helper process
  // (Gatherer::start_nvml_helper): a wedged driver must not hang the command.
  Duration nvml_timeout = std::chrono::seconds(5);
  // How long a /proc read that takes a process's mmap lock may take (--proc-timeout; nullopt:
  // no limit): one that does not answer marks the process `stuck` (procfs/proc_fs.h).
  std::optional<Duration> proc_timeout = procfs::kDefaultReadDeadline;
  // NVML's helper, forked before the command line was parsed (cli/early_helper.h):
  // Gatherer::start_nvml_helper adopts it instead of forking one.
  std::shared_ptr<GpuSampler> early_helper;
};

struct Gathered {
  diagnose::Input input;
  std::vector<DeviceFile> files;
  ScanStats stats;
  NvmlState nvml_state = NvmlState::kDisabled;
  std::string nvml_message;
  // Only when asked for (Gatherer::want_gpu_details, snapshot): clocks, ECC, … per GPU.
  std::vector<GpuDetails> gpu_details;
  // When NVML's answer (its per-process samples among it) came: Unix seconds; 0 without one.
  double looked_at = 0;
};

// What this collection could not read, and whether it decides a verdict (diagnose/unseen.h):
// memory is judged from NVML when NVML answered, unless an AMD or Intel GPU gives no used
// total (i915, xe): its memory is known only from the processes read.
diagnose::Unseen unseen_in(const Gathered& gathered);

// Errors: a bad device selection (a usage error) or an unreadable /proc (a runtime failure).
// An NVML failure is not an error here: nvml_state says so and the caller decides.
struct GatherError {
  bool usage = false;  // true: the selection was wrong (exit 2); false: /proc failed (exit 3)
  std::string message;
};

// The files to scan: `paths` and --device-glob patterns (each must match something), or the
// NVIDIA defaults and the DRM nodes of the AMD and Intel GPUs sysfs lists (and /dev/kfd) when
// both are empty. A selected file that is such a node is marked as one (DeviceFile::drm), by
// identity. Errors are usage errors.
// `drm_gpus`, when given, receives the DRM GPUs that sysfs walk found and the selection
// scans (at least one of their nodes selected), so the walk is done once per command.
Result<std::vector<DeviceFile>> select_device_files(
    const CollectOptions& options, const std::vector<std::string>& paths = {},
    std::vector<procfs::DrmGpu>* drm_gpus = nullptr);

// Everything /proc says about each holder the scan found, classified from /proc alone.
// Holders that exited since the scan are counted in scan.stats.vanished and left out.
std::vector<Holder> read_holders(const procfs::ProcFs& proc, procfs::HolderScan& scan);

// Holder::mps_pipe_directory for the MPS servers (service kMpsServer) and the clients NVML lists
// in an MPS list, only for users who run two or more servers and have such a client: the
// directory decides which server a client connects to, and diagnose breaks the tie with it.
// Anything else is left unread (environ takes each process's mmap lock: ProcFs's deadline
// bounds every read). One that cannot be read stays nullopt.
void read_mps_pipe_directories(const procfs::ProcFs& proc, const GpuView& view,
                               std::vector<Holder>& holders);

// Collects diagnosis inputs, as often as asked (`gpuclean wait` polls): the device files and
// /proc are opened once, NVML on the first collect() and kept open for the next ones.
// `test_gpu_source` (hidden flag) replaces NVML.
class GpuSampler;

class Gatherer {
 public:
  ~Gatherer();
  Gatherer(const Gatherer&) = delete;
  Gatherer& operator=(const Gatherer&) = delete;
  static std::variant<std::unique_ptr<Gatherer>, GatherError> open(const CollectOptions& options);
  // One /proc scan and one NVML query, run side by side.
  Gathered collect();
  // Also ask NVML for the snapshot-only facts in collect() (a dozen calls more per GPU), with
  // the view: from the helper too, bounded by nvml_timeout like the view.
  void want_gpu_details() { gpu_details_ = true; }
  // Asks NVML through a helper process from now on (collect/gpu_sampler.h), each answer bounded
  // by options.nvml_timeout: on a timeout NVML is `failed` ("NVML did not answer in 5 s") and
  // the command goes on with /proc. The helper is forked here — call this before any thread
  // exists — and starts NVML at once, so its init overlaps the first /proc scan. It is never
  // waited for at the end: SIGKILLed, and left to the kernel if it is stuck in the driver.
  void start_nvml_helper();
  // The /proc this gatherer reads, with what it learned (processes whose memory map is
  // locked are not waited on again): for the reads that follow a collect.
  [[nodiscard]] const procfs::ProcFs& proc() const { return proc_; }
  // The GPUs alone: NVML's view, and the DRM GPUs' from a scan of their nodes only (no other
  // /proc reads). For sampling memory while a workload runs and kill's polls. nullopt when
  // NVML is disabled, absent or failing and there is no DRM GPU.
  std::optional<GpuView> query_gpu_view();
  // GPU views come from `source` from now on instead of NVML in this process or the helper
  // (run's sampler); an empty OpenedSource stops asking.
  void use_gpu_source(nvml::OpenedSource source);
  // From now on each collect() reads only the processes where a holder is likely and the rest
  // in turns, every one at least once per `full_period` (procfs/rolling_scan.h): `top`.
  void scan_in_turns(Duration full_period);

 private:
  struct NvmlOutcome {
    NvmlState state = NvmlState::kDisabled;
    std::string message;
    std::optional<GpuView> view;
    std::vector<GpuDetails> details;
  };
  Gatherer(CollectOptions options, std::vector<DeviceFile> files, procfs::ProcFs proc);
  NvmlOutcome query_gpus();
  // Appends the DRM GPUs, numbered after NVML's, with their clients' memory from `holders`.
  void add_drm_gpus(diagnose::Input& input);
  void add_listed_only(const GpuView& view, std::set<Pid>& seen, Gathered& out);
  [[nodiscard]] bool selection_shows_every_cuda_process() const;

  CollectOptions options_;
  std::vector<DeviceFile> files_;
  std::vector<procfs::DrmGpu> drm_gpus_;  // AMD and Intel GPUs (sysfs), unless --no-drm
  // How many GPUs NVML numbers before the DRM ones: its last view's count, or until it
  // answered, the /dev/nvidiaN nodes (0 with --no-nvml).
  unsigned nvidia_gpus_ = 0;
  procfs::ProcFs proc_;
  nvml::OpenedSource source_;
  std::shared_ptr<GpuSampler> helper_;
  std::unique_ptr<procfs::RollingScan> rolling_;
  std::set<Pid> likely_holders_;  // the last collect's holders and NVML's PIDs (rolling_)
  // rolling_: what each holder of the last collect held, and when its whole table was last
  // read. A holder re-checked within RollingScan::kYoung of that keeps its files when its
  // descriptors still name them (procfs::still_holds: a readlink per held fd, not per fd).
  struct KnownHolding {
    procfs::FileHolding holding;
    std::chrono::steady_clock::time_point scanned;
  };
  std::map<Pid, KnownHolding> known_holdings_;
  bool source_tried_ = false;
  bool gpu_details_ = false;
};

// What a one-shot command wants of its look.
struct GatherRequest {
  bool gpu_details = false;  // Gatherer::want_gpu_details (snapshot)
  // Judge the leftovers' activity as status does: look again where one shows a single busy
  // sample (collect/activity_look.h).
  bool settle_activity = false;
};

// Gatherer::open + one collect(), for the one-shot commands.
std::variant<Gathered, GatherError> gather(const CollectOptions& options,
                                           GatherRequest request = {});

}  // namespace gpuclean::collect
