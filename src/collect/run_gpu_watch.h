// The GPU side of one `gpuclean run`: the pre-run level right after the launch, memory samples
// while the workload runs (--record), the check after the teardown that every GPU is back,
// and device holders that appeared outside the run. NVML is asked only through a GpuSampler
// process, never in gpuclean's own (gpu_sampler.h). The judgements are diagnose's
// (gpu_return.h); this class collects their inputs — the views, and what /proc proves about
// each PID NVML lists — and writes the results into the run's record.
//
// It knows nothing of the run's processes beyond the PIDs it is given; the processes are
// ops::RunSession's (ops may not depend on collect, docs/design.md), and `run` joins the two.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "collect/gather.h"
#include "collect/gpu_sampler.h"
#include "core/duration.h"
#include "core/run_record.h"
#include "diagnose/gpu_return.h"

namespace gpuclean::collect {

struct RunGpuOptions {
  CollectOptions collect;
  std::optional<std::set<unsigned>> gpus;    // --gpus; nullopt: every GPU
  Duration wait = std::chrono::seconds(30);  // how long verify() waits for the memory
  // One NVML query in the sampler before it counts as hung (a healthy one takes ~20 ms
  // including NVML's init, docs/facts.md); run sets --nvml-timeout's (default 5 s).
  Duration nvml_timeout = std::chrono::seconds(5);
  // The sample taken as the workload ends waits less: the teardown must not.
  Duration last_sample_timeout = std::chrono::seconds(2);
};

// The PIDs among `listed` shown to be outside a run whose workload started at
// `workload_start` (stat ticks): alive in `proc` now, and started before it — so no process of
// the run can have had the PID — or one of the node's services (procfs/node_service.h) still
// alive after the teardown, such as the MPS server started for the workload's first client.
// Without a start time nothing is shown.
std::set<Pid> shown_outside_run(const procfs::ProcFs& proc, const std::set<Pid>& listed,
                                std::optional<std::uint64_t> workload_start);

class RunGpuWatch {
 public:
  // Opens the device files and /proc (Gatherer::open's errors: usage or runtime).
  static std::variant<std::unique_ptr<RunGpuWatch>, GatherError> open(RunGpuOptions options);
  RunGpuWatch(const RunGpuWatch&) = delete;
  RunGpuWatch& operator=(const RunGpuWatch&) = delete;
  ~RunGpuWatch() = default;

  // Called with the PID and start time of every sampler process (the one running now, and
  // each started later): the run must never count it as its own.
  void on_sampler(std::function<void(Pid, std::uint64_t)> exclude);

  // One full collection (/proc + the GPUs through the sampler): --require-clean's check.
  Gathered collect();

  // Right after the launch, without waiting on NVML: the device holders now (/proc; a holder
  // that appears later is new) and a request for the GPUs' view, which becomes the pre-run
  // level when it comes (receive() or finish_baseline()). Meanwhile the workload is supervised
  // as usual: a slow or hung driver delays no signal and no exit (issue 14: a hung nvmlInit
  // made `run -- true` report 15.2 s). With `samples` (--record), the sampler stays for
  // samples while the workload runs; otherwise it is closed once the baseline is in, so
  // nothing of the driver is open meanwhile.
  void begin_baseline(bool samples);
  // The fd to watch while the workload runs (SuperviseOptions::watch_fds): the sampler's
  // answers — the baseline's, then samples'. nullopt when nothing is awaited.
  [[nodiscard]] std::optional<int> watch_fd() const;
  // The watch fd is readable: takes the answer, if whole. The first is the baseline: then
  // `run_pids()` — the run's members by then — are left out of the pre-run level
  // (diagnose::baseline_of), gpu_source, gpus and a first sample are filled, and NVML's state
  // is returned (kFailed is worth a line). Later answers are samples.
  std::optional<NvmlState> receive(RunLog& log, const std::function<std::set<Pid>()>& run_pids);
  // After the workload: the baseline's answer, if it has not come, awaited until nvml_timeout
  // after begin_baseline(); none by then is NVML failing ("did not answer"). NVML's state when
  // the baseline was completed now.
  std::optional<NvmlState> finish_baseline(RunLog& log,
                                           const std::function<std::set<Pid>()>& run_pids);
  [[nodiscard]] const std::string& nvml_message() const { return nvml_message_; }

  // The sample timer fired: ask (never waits; a hung driver stalls only the sampler).
  void request_sample();
  // As the workload ends: one more sample, waiting at most last_sample_timeout.
  void last_sample(RunLog& log);

  // After the teardown: polls (100 ms, bounded by `wait`) until every GPU is back at its
  // pre-run level (diagnose::judge_return), with the PIDs of the run (`run_pids`) and those
  // /proc shows to be outside it. Writes after/back/note per GPU and gpu_check: kNotChecked
  // when NVML gives no answer (never kBack), kNone without a pre-run level. AMD and Intel GPUs
  // are checked the same way, from their clients and amdgpu's used total, NVML or not.
  GpuCheck verify(RunLog& log, const std::set<Pid>& run_pids,
                  std::optional<std::uint64_t> workload_start);

  // Device holders that appeared during the run and are not part of it: one line each, named
  // for the user (escaped). Nothing proves they are the run's: they are left alone.
  // A holder seen at the baseline counts as there before only if it started before the
  // workload (`workload_start`, stat ticks): the baseline is taken just after the launch, and
  // a process started in that moment is the run's contemporary, not its predecessor.
  std::vector<std::string> escaped(const std::set<Pid>& run_pids,
                                   std::optional<std::uint64_t> workload_start);

 private:
  RunGpuWatch(RunGpuOptions options, std::unique_ptr<Gatherer> gatherer, procfs::ProcFs proc)
      : options_(std::move(options)), gatherer_(std::move(gatherer)), proc_(std::move(proc)) {}
  // Starts a sampler process (none with --no-nvml); false when it cannot be started (the
  // gatherer then reports NVML failed).
  bool start_sampler();
  // start_sampler(), and the gatherer asks NVML through it (waiting for its answers).
  void attach_sampler();
  void detach_sampler();
  void complete_baseline(RunLog& log, const SamplerAnswer& answer, const std::set<Pid>& members);
  // The AMD and Intel GPUs' pre-run levels, from the look begin_baseline() took (the kernel
  // answers them, NVML or not), once: after NVML's GPUs, or at verify() without NVML.
  void add_drm_baselines(RunLog& log, const std::set<Pid>& members);
  // One GPU of the run's record as the run starts, and its pre-run level when it has a
  // memory figure (less what `members` hold).
  void add_gpu(RunRecord& record, const Gpu& gpu, const std::set<Pid>& members);
  void sample(RunLog& log, const GpuView& view);
  RunGpu* gpu(RunLog& log, unsigned index);

  RunGpuOptions options_;
  std::unique_ptr<Gatherer> gatherer_;
  procfs::ProcFs proc_;
  std::shared_ptr<GpuSampler> sampler_;
  std::function<void(Pid, std::uint64_t)> exclude_;
  std::vector<diagnose::GpuBaseline> baselines_;
  std::vector<Gpu> drm_before_;  // the DRM GPUs as begin_baseline() found them
  bool drm_baselined_ = false;
  bool gatherer_asks_sampler_ = false;  // the gatherer's GPU views come from sampler_
  bool baseline_pending_ = false;       // asked, not answered yet
  bool want_samples_ = false;
  std::chrono::steady_clock::time_point baseline_asked_;
  bool have_view_ = false;        // the baseline had a GPU view
  bool baseline_failed_ = false;  // NVML was there but failed at the start: never "clean"
  std::string nvml_message_;
  std::set<std::pair<Pid, std::uint64_t>> holders_before_;
};

}  // namespace gpuclean::collect
