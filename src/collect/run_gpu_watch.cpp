#include "collect/run_gpu_watch.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "diagnose/diagnosis.h"
#include "output/escape.h"
#include "output/owner_text.h"
#include "procfs/node_service.h"

namespace gpuclean::collect {
namespace {

constexpr Duration kFullViewNvmlTimeout = std::chrono::seconds(15);

using Clock = std::chrono::steady_clock;

// The driver frees a context ~0.1 s after its last holder exits (docs/facts.md): poll at that pace.
constexpr auto kVerifyPoll = std::chrono::milliseconds(100);

bool selected(const RunGpuOptions& options, unsigned index) {
  return !options.gpus || options.gpus->count(index) > 0;
}

}  // namespace

std::set<Pid> shown_outside_run(const procfs::ProcFs& proc, const std::set<Pid>& listed,
                                std::optional<std::uint64_t> workload_start) {
  std::set<Pid> outside;
  if (!workload_start) return outside;
  for (Pid pid : listed) {
    // Alive now and older than the workload: it has had this PID since before the run began,
    // so the run cannot have had it. A PID /proc does not have (a dead owner, another PID
    // namespace) or a younger process proves nothing. Ticks are 10 ms: the same tick as the
    // workload is not "before".
    auto info = proc.read_process(pid);
    if (!info.ok() || !has_live_thread(*info)) continue;
    // A node service alive after the teardown is the node's, not the run's: the MPS server the
    // node's control daemon started for the workload's first client (an MPS daemon the run
    // started itself went down with the run).
    if (info->start_ticks < *workload_start || procfs::recognise_service(proc, *info)) {
      outside.insert(pid);
    }
  }
  return outside;
}

std::variant<std::unique_ptr<RunGpuWatch>, GatherError> RunGpuWatch::open(RunGpuOptions options) {
  auto opened = Gatherer::open(options.collect);
  if (auto* error = std::get_if<GatherError>(&opened)) return *error;
  auto proc = procfs::ProcFs::open(options.collect.proc_root, options.collect.proc_timeout);
  if (!proc.ok()) return GatherError{false, proc.error().message()};
  return std::unique_ptr<RunGpuWatch>(
      new RunGpuWatch(std::move(options), std::move(std::get<std::unique_ptr<Gatherer>>(opened)),
                      std::move(proc).value()));
}

void RunGpuWatch::on_sampler(std::function<void(Pid, std::uint64_t)> exclude) {
  exclude_ = std::move(exclude);
  if (sampler_ && exclude_) exclude_(sampler_->pid(), sampler_->start_ticks());
}

bool RunGpuWatch::start_sampler() {
  if (options_.collect.no_nvml) return false;
  if (sampler_) return true;
  auto started = GpuSampler::start(options_.collect);
  if (!started.ok()) {
    // Never NVML in this process instead: say it failed.
    nvml_message_ = started.error().message();
    gatherer_->use_gpu_source({nvml::OpenedSource::State::kFailed, nullptr, nvml_message_});
    return false;
  }
  sampler_ = std::move(started).value();
  if (exclude_) exclude_(sampler_->pid(), sampler_->start_ticks());
  return true;
}

void RunGpuWatch::attach_sampler() {
  if (gatherer_asks_sampler_ || !start_sampler()) return;
  // A full view (--require-clean's check, the verification after the teardown) may follow a
  // fresh nvmlInit while the driver is still releasing the workload's contexts: slow on a
  // healthy node without persistence mode. It gets at least kFullViewNvmlTimeout (found in
  // review: 5 s would turn such runs "not checked").
  gatherer_->use_gpu_source(
      open_sampler_source(sampler_, std::max(options_.nvml_timeout, kFullViewNvmlTimeout)));
  gatherer_asks_sampler_ = true;
}

void RunGpuWatch::detach_sampler() {
  gatherer_->use_gpu_source({});
  gatherer_asks_sampler_ = false;
  sampler_.reset();
}

Gathered RunGpuWatch::collect() {
  attach_sampler();
  return gatherer_->collect();
}

RunGpu* RunGpuWatch::gpu(RunLog& log, unsigned index) {
  for (RunGpu& g : log.record().gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

void RunGpuWatch::sample(RunLog& log, const GpuView& view) {
  RunSample s;
  s.t = log.now();
  for (RunGpu& g : log.record().gpus) {
    std::optional<Bytes> used;
    for (const Gpu& gpu : view.gpus) {
      if (gpu.index == g.index && gpu.memory) used = gpu.memory->used;
    }
    if (used && (!g.peak || *used > *g.peak)) g.peak = used;
    s.used.push_back(used);
  }
  log.record().samples.push_back(std::move(s));
}

void RunGpuWatch::begin_baseline(bool samples) {
  want_samples_ = samples;
  // The holders now, from /proc alone: the GPUs' view comes from the sampler's answer.
  gatherer_->use_gpu_source({});
  gatherer_asks_sampler_ = false;
  const Gathered before = gatherer_->collect();
  for (const Holder& h : before.input.holders) {
    if (!h.devices.empty()) holders_before_.insert({h.process.pid, h.process.start_ticks});
  }
  if (before.input.gpu_view) {
    for (const Gpu& gpu : before.input.gpu_view->gpus) {
      if (gpu.source == Gpu::Source::kDrm && selected(options_, gpu.index)) {
        drm_before_.push_back(gpu);
      }
    }
  }
  if (!start_sampler()) return;  // --no-nvml, or no sampler: nothing to wait for
  sampler_->request();
  baseline_pending_ = true;
  baseline_asked_ = Clock::now();
}

std::optional<int> RunGpuWatch::watch_fd() const {
  if (sampler_ && (baseline_pending_ || want_samples_)) return sampler_->reply_fd();
  return std::nullopt;
}

void RunGpuWatch::complete_baseline(RunLog& log, const SamplerAnswer& answer,
                                    const std::set<Pid>& members) {
  baseline_pending_ = false;
  nvml_message_ = answer.message;
  RunRecord& record = log.record();
  have_view_ = answer.view.has_value();
  baseline_failed_ = answer.state == NvmlState::kFailed;
  record.gpu_source =
      have_view_ ? (options_.collect.test_gpu_source.empty() ? "nvml" : "test") : "none";
  if (have_view_) {
    for (const Gpu& gpu : answer.view->gpus) {
      if (selected(options_, gpu.index)) add_gpu(record, gpu, members);
    }
    sample(log, *answer.view);
  }
  add_drm_baselines(log, members);
  // Samples need a sampler that answers; otherwise nothing of the driver stays open.
  if (!want_samples_ || !have_view_) detach_sampler();
}

void RunGpuWatch::add_gpu(RunRecord& record, const Gpu& gpu, const std::set<Pid>& members) {
  RunGpu g;
  g.index = gpu.index;
  g.name = gpu.name;
  g.uuid = gpu.uuid;
  if (gpu.memory) g.total = gpu.memory->total;
  if (auto baseline = diagnose::baseline_of(gpu, members)) {
    g.baseline = baseline->used;
    baselines_.push_back(*baseline);
  }
  record.gpus.push_back(std::move(g));
}

void RunGpuWatch::add_drm_baselines(RunLog& log, const std::set<Pid>& members) {
  if (drm_baselined_) return;
  drm_baselined_ = true;
  RunRecord& record = log.record();
  for (const Gpu& gpu : drm_before_) add_gpu(record, gpu, members);
  if (!drm_before_.empty()) record.gpu_source = have_view_ ? "nvml+drm" : "drm";
}

std::optional<NvmlState> RunGpuWatch::receive(RunLog& log,
                                              const std::function<std::set<Pid>()>& run_pids) {
  if (!sampler_) return std::nullopt;
  auto answer = sampler_->receive();
  if (!answer) return std::nullopt;
  if (baseline_pending_) {
    complete_baseline(log, *answer, run_pids());
    return answer->state;
  }
  if (answer->view) sample(log, *answer->view);
  return std::nullopt;
}

std::optional<NvmlState> RunGpuWatch::finish_baseline(
    RunLog& log, const std::function<std::set<Pid>()>& run_pids) {
  if (!baseline_pending_) return std::nullopt;
  const auto deadline = baseline_asked_ + options_.nvml_timeout;
  while (sampler_) {
    if (auto answer = sampler_->receive()) {
      complete_baseline(log, *answer, run_pids());
      return answer->state;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd ready{sampler_->reply_fd(), POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    if ((ready.revents & (POLLHUP | POLLERR)) != 0 && (ready.revents & POLLIN) == 0) break;
  }
  SamplerAnswer none;
  none.state = NvmlState::kFailed;
  none.message = fmt::format("NVML did not answer in {} s (the driver may be hung)",
                             static_cast<double>(options_.nvml_timeout.count()) / 1000.0);
  complete_baseline(log, none, run_pids());
  return none.state;
}

void RunGpuWatch::request_sample() {
  if (sampler_ && !baseline_pending_) sampler_->request();
}

void RunGpuWatch::last_sample(RunLog& log) {
  if (!sampler_ || !have_view_) return;
  if (auto answer = sampler_->query(options_.last_sample_timeout); answer.view) {
    sample(log, *answer.view);
  }
}

GpuCheck RunGpuWatch::verify(RunLog& log, const std::set<Pid>& run_pids,
                             std::optional<std::uint64_t> workload_start) {
  RunRecord& record = log.record();
  add_drm_baselines(log, run_pids);  // without NVML no baseline answer came: now
  if (!have_view_ && (baseline_failed_ || baselines_.empty())) {
    // No NVML (or --no-nvml) and no AMD or Intel GPU: nothing to check. NVML failing at the
    // start: the GPUs could not be checked, which is not the same — never clean (found in
    // review; before, the run was "clean", exit 0).
    record.gpu_check = baseline_failed_ ? GpuCheck::kNotChecked : GpuCheck::kNone;
    return record.gpu_check;
  }
  if (have_view_) attach_sampler();
  const auto deadline = Clock::now() + options_.wait;
  for (;;) {
    auto view = gatherer_->query_gpu_view();
    if (!view) {
      // No reading after the teardown: every GPU with a pre-run level is "not checked".
      record.gpu_check = GpuCheck::kNotChecked;
      for (const diagnose::GpuBaseline& baseline : baselines_) {
        if (RunGpu* g = gpu(log, baseline.index)) {
          g->back.reset();
          g->note = "not checked: NVML gave no answer after the teardown";
        }
      }
      break;
    }
    sample(log, *view);
    std::set<Pid> listed;
    for (const Gpu& g : view->gpus) {
      for (const GpuProcess& p : g.processes) {
        if (run_pids.count(p.pid) == 0) listed.insert(p.pid);
      }
    }
    const diagnose::RunPids pids{run_pids, shown_outside_run(proc_, listed, workload_start)};
    // A GPU the view lacks, or that gives no memory figure now, is not back.
    bool all_back = true;
    for (const diagnose::GpuBaseline& baseline : baselines_) {
      RunGpu* g = gpu(log, baseline.index);
      if (g == nullptr) continue;
      g->back = false;
      g->note = "GPU " + std::to_string(baseline.index) + " is no longer reported by NVML";
      for (const Gpu& now : view->gpus) {
        if (now.index != baseline.index) continue;
        if (auto judged = diagnose::judge_return(baseline, now, pids)) {
          g->after = judged->after;
          g->back = judged->back;
          g->note = judged->note;
        } else {
          g->note = "NVML gives no memory figure for GPU " + std::to_string(now.index) + " now";
        }
      }
      all_back = all_back && *g->back;
    }
    record.gpu_check = all_back ? GpuCheck::kBack : GpuCheck::kNotBack;
    if (all_back || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(kVerifyPoll);
  }
  return record.gpu_check;
}

std::vector<std::string> RunGpuWatch::escaped(const std::set<Pid>& run_pids,
                                              std::optional<std::uint64_t> workload_start) {
  std::vector<std::string> lines;
  Gathered gathered = gatherer_->collect();
  const Diagnosis diagnosis = diagnose::diagnose(std::move(gathered.input), {});
  for (const Holder& h : diagnosis.holders) {
    if (!h.visible || h.devices.empty() || h.klass == HolderClass::kMonitor) continue;
    if (h.process.pid == ::getpid() || run_pids.count(h.process.pid) > 0) continue;
    const bool older = !workload_start || h.process.start_ticks < *workload_start;
    if (older && holders_before_.count({h.process.pid, h.process.start_ticks}) > 0) continue;
    // Whose it is (another job's, a container's) is what the reader asks next.
    const std::string owner =
        h.process.owner && h.process.owner->kind != Owner::Kind::kCgroup
            ? ", " + output::escape_terminal(output::owner_label(*h.process.owner))
            : "";
    lines.push_back(fmt::format(
        "pid {} ({}{}, {}) began holding {} during the run and is not part of it; it was left "
        "alone (gpuclean explain {})",
        h.process.pid, output::escape_terminal(h.process.user), owner,
        output::display_command(h.process.cmdline.empty() ? std::vector<std::string>{h.process.comm}
                                                          : h.process.cmdline,
                                60),
        output::escape_terminal(h.devices.front().path), h.process.pid));
  }
  return lines;
}

}  // namespace gpuclean::collect
