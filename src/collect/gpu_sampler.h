// NVML in a process of its own, for `gpuclean run`. Two reasons (docs/design.md, "run"):
// a sick GPU can hold an NVML call in the driver for minutes, and the supervisor must keep
// forwarding signals and tearing down meanwhile; and loading NVML took 18 MiB of RSS on an
// H200 (driver 580, bench/run_bench.sh), which a supervisor that waits for hours need not carry.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "collect/gather.h"
#include "core/duration.h"
#include "core/model.h"
#include "core/result.h"
#include "core/unique_fd.h"
#include "nvml/gpu_source.h"

namespace gpuclean::collect {

struct SamplerAnswer {
  NvmlState state = NvmlState::kFailed;
  std::string message;  // absent/failed: why
  std::optional<GpuView> view;
  std::vector<GpuDetails> details;  // asked for with the view (snapshot), by GPU
};

// One line of the sampler's answer (without its newline) as an answer.
SamplerAnswer parse_sampler_answer(std::string_view line);

class GpuSampler {
 public:
  // Forks the sampler. It opens NVML (or --test-gpu-source) and then answers each request
  // with one JSON line; it dies with gpuclean (PR_SET_PDEATHSIG) and ends at EOF.
  // How the sampler ends when gpuclean is done with it.
  enum class Ending {
    kShutDown,  // close its requests, give it 200 ms to shut NVML down (run: it lived long)
    kAbandon,   // SIGKILL at once (one-shot commands: exit now, whatever the driver does)
  };
  static Result<std::shared_ptr<GpuSampler>> start(const CollectOptions& options,
                                                   Ending ending = Ending::kShutDown);
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;
  // Closes the request pipe (the sampler shuts NVML down and exits), SIGKILLs it through its
  // pidfd if it has not within 200 ms, and reaps it; one stuck in the driver is never waited for.
  ~GpuSampler();

  [[nodiscard]] Pid pid() const { return pid_; }
  [[nodiscard]] std::uint64_t start_ticks() const { return start_ticks_; }
  // Readable when (part of) an answer has arrived.
  [[nodiscard]] int reply_fd() const { return from_child_.get(); }
  [[nodiscard]] bool outstanding() const { return outstanding_; }
  // Asks for one view (with `details`: and each GPU's snapshot-only facts); nothing when an
  // answer is still outstanding or the sampler is gone.
  void request(bool details = false);
  // Reads what has arrived without blocking; an answer once a whole line is in.
  std::optional<SamplerAnswer> receive();
  // A view taken after this call: waits out an answer still outstanding, then request()s and
  // waits in poll() up to `timeout` in all. kFailed when it does not come in time (the
  // request stays outstanding, for the next query to wait out) or the sampler is gone.
  SamplerAnswer query(Duration timeout, bool details = false);

 private:
  GpuSampler(Pid pid, std::uint64_t start_ticks, UniqueFd pidfd, UniqueFd to_child,
             UniqueFd from_child, Ending ending)
      : ending_(ending),
        pid_(pid),
        start_ticks_(start_ticks),
        pidfd_(std::move(pidfd)),
        to_child_(std::move(to_child)),
        from_child_(std::move(from_child)) {}
  Ending ending_;
  Pid pid_;
  std::uint64_t start_ticks_;
  UniqueFd pidfd_;
  UniqueFd to_child_;
  UniqueFd from_child_;
  std::string buffer_;
  bool outstanding_ = false;
  bool gone_ = false;
};

// The sampler as a GpuSource for a Gatherer: opened by one query (NVML's state comes from the
// sampler's first answer, which is also the first query()'s view); each later query() asks
// afresh and waits up to `timeout`. With `details`, every answer carries the snapshot-only
// facts too, for query_details().
nvml::OpenedSource open_sampler_source(const std::shared_ptr<GpuSampler>& sampler, Duration timeout,
                                       bool details = false);

}  // namespace gpuclean::collect
