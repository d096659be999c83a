#include "collect/run_gpu_watch.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "diagnose/diagnosis.h"
#include "output/escape.h"

namespace gpuclean::collect {
namespace {

using Clock = std::chrono::steady_clock;

// The driver frees a context ~0.1 s after its last holder exits (FACTS.md): poll at that pace.
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
    if (info.ok() && has_live_thread(*info) && info->start_ticks < *workload_start) {
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

void RunGpuWatch::attach_sampler() {
  if (options_.collect.no_nvml || sampler_) return;
  auto started = GpuSampler::start(options_.collect);
  if (!started.ok()) {
    // Never NVML in this process instead: say it failed.
    gatherer_->use_gpu_source(
        {nvml::OpenedSource::State::kFailed, nullptr, started.error().message()});
    return;
  }
  sampler_ = std::move(started).value();
  if (exclude_) exclude_(sampler_->pid(), sampler_->start_ticks());
  gatherer_->use_gpu_source(open_sampler_source(sampler_, options_.nvml_timeout));
}

void RunGpuWatch::detach_sampler() {
  gatherer_->use_gpu_source({});
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

NvmlState RunGpuWatch::take_baseline(RunLog& log, const std::function<std::set<Pid>()>& run_pids) {
  attach_sampler();
  Gathered before = gatherer_->collect();
  nvml_message_ = before.nvml_message;
  for (const Holder& h : before.input.holders) {
    if (!h.devices.empty()) holders_before_.insert({h.process.pid, h.process.start_ticks});
  }
  RunRecord& record = log.record();
  have_view_ = before.input.gpu_view.has_value();
  baseline_failed_ = before.nvml_state == NvmlState::kFailed;
  record.gpu_source =
      have_view_ ? (options_.collect.test_gpu_source.empty() ? "nvml" : "test") : "none";
  const std::set<Pid> members = run_pids();
  if (!have_view_) return before.nvml_state;
  for (const Gpu& gpu : before.input.gpu_view->gpus) {
    if (!selected(options_, gpu.index)) continue;
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
  sample(log, *before.input.gpu_view);
  return before.nvml_state;
}

std::optional<int> RunGpuWatch::keep_sampling(bool want) {
  if (want && have_view_ && sampler_) return sampler_->reply_fd();
  detach_sampler();  // nothing of the driver's open while the workload runs
  return std::nullopt;
}

void RunGpuWatch::request_sample() {
  if (sampler_) sampler_->request();
}

void RunGpuWatch::receive_sample(RunLog& log) {
  if (!sampler_) return;
  if (auto answer = sampler_->receive(); answer && answer->view) sample(log, *answer->view);
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
  if (!have_view_) {
    // No NVML (or --no-nvml): nothing to check. NVML failing at the start: the GPUs could not
    // be checked, which is not the same — never clean (found in review; before, the run was
    // "clean", exit 0).
    record.gpu_check = baseline_failed_ ? GpuCheck::kNotChecked : GpuCheck::kNone;
    return record.gpu_check;
  }
  attach_sampler();
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
    lines.push_back(fmt::format(
        "pid {} ({}, {}) began holding {} during the run and is not part of it; it was left "
        "alone (gpuclean explain {})",
        h.process.pid, output::escape_terminal(h.process.user),
        output::display_command(h.process.cmdline.empty() ? std::vector<std::string>{h.process.comm}
                                                          : h.process.cmdline,
                                60),
        output::escape_terminal(h.devices.front().path), h.process.pid));
  }
  return lines;
}

}  // namespace gpuclean::collect
