#include "cli/run_command.h"
#include "cli/test_hooks.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "collect/gather.h"
#include "collect/gpu_sampler.h"
#include "core/duration.h"
#include "core/run_record.h"
#include "core/units.h"
#include "diagnose/diagnosis.h"
#include "diagnose/gpu_return.h"
#include "ops/cgroup.h"
#include "ops/launch.h"
#include "ops/signals.h"
#include "ops/supervisor.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/run_record.h"

namespace gpuclean::cli {

using collect::Gathered;
using collect::Gatherer;
using collect::GatherError;
using collect::GpuSampler;
using collect::open_sampler_source;
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitTimeout = 124;
constexpr int kExitNotStarted = 125;
constexpr int kExitNotExecutable = 126;
constexpr int kExitNotFound = 127;
constexpr auto kVerifyPoll = std::chrono::milliseconds(100);
// How long one NVML query may take in the sampler before it counts as hung (a healthy one
// takes ~20 ms including NVML's init, FACTS.md).
constexpr Duration kNvmlTimeout = std::chrono::seconds(15);
// The sample taken as the workload ends waits less: the teardown must not.
constexpr Duration kLastSampleTimeout = std::chrono::seconds(2);

struct Settings {
  std::optional<Duration> timeout;
  Duration grace{};
  Duration wait{};
  Duration sample{};
  std::optional<std::set<unsigned>> gpus;
};

std::optional<Settings> parse_settings(const RunOptions& o, const Io& io) {
  auto fail = [&io](const std::string& what) -> std::optional<Settings> {
    io.err << "gpuclean: run: " << what << '\n';
    return std::nullopt;
  };
  Settings s;
  if (!o.timeout.empty()) {
    auto timeout = parse_duration(o.timeout);
    if (!timeout.ok()) return fail("--timeout " + timeout.error().message());
    s.timeout = *timeout;
  }
  auto grace = parse_duration(o.grace);
  if (!grace.ok()) return fail("--grace " + grace.error().message());
  s.grace = *grace;
  auto wait = parse_duration(o.wait);
  if (!wait.ok()) return fail("--wait " + wait.error().message());
  s.wait = *wait;
  auto sample = parse_duration(o.sample_interval);
  if (!sample.ok()) return fail("--sample-interval " + sample.error().message());
  if (sample->count() < 10) return fail("--sample-interval must be at least 10ms");
  s.sample = *sample;
  auto gpus = parse_gpu_list(o.check.common.gpus);
  if (!gpus.ok()) return fail(gpus.error().message());
  s.gpus = *gpus;
  return s;
}

bool selected(const Settings& settings, unsigned index) {
  return !settings.gpus || settings.gpus->count(index) > 0;
}

// The record file is created before the workload starts, so that a typo in its path costs
// nothing; it is filled and renamed into place at the end.
class RecordFile {
 public:
  static Result<RecordFile> create(const std::string& path) {
    RecordFile file;
    file.path_ = path;
    file.temp_ = path + ".tmp." + std::to_string(::getpid());
    // O_EXCL|O_NOFOLLOW: a root run must not write through a link planted at this name.
    file.fd_ = UniqueFd(
        ::open(file.temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!file.fd_) return errno_error("create " + file.temp_);
    return file;
  }
  RecordFile(RecordFile&&) noexcept = default;
  RecordFile& operator=(RecordFile&&) noexcept = default;
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  ~RecordFile() {
    if (fd_) ::unlink(temp_.c_str());
  }
  Status write(const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd_.get(), text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno_error("write " + temp_);
      done += static_cast<std::size_t>(n);
    }
    fd_.reset();
    if (::rename(temp_.c_str(), path_.c_str()) != 0) {
      const Error error = errno_error("rename " + temp_ + " to " + path_);
      ::unlink(temp_.c_str());
      return error;
    }
    return Ok{};
  }

 private:
  RecordFile() = default;
  std::string path_;
  std::string temp_;
  UniqueFd fd_;
};

// Everything one run learns, built up as it goes; becomes the record and the summary.
class RunState {
 public:
  RunState(const Settings& settings, std::vector<std::string> command)
      : settings_(settings), started_(Clock::now()) {
    record_.command = std::move(command);
    record_.started_at = unix_now();
  }

  [[nodiscard]] double now() const {
    return std::chrono::duration<double>(Clock::now() - started_).count();
  }
  void event(const std::string& kind, const std::string& detail) {
    record_.events.push_back({now(), kind, detail});
  }

  // The GPUs as the run starts; memory the run's own processes already hold (they raced
  // ahead of this query) is not part of the pre-run level.
  void set_baseline(const GpuView& view, const std::set<Pid>& run_pids) {
    for (const Gpu& gpu : view.gpus) {
      if (!selected(settings_, gpu.index)) continue;
      RunGpu g;
      g.index = gpu.index;
      g.name = gpu.name;
      g.uuid = gpu.uuid;
      if (gpu.memory) g.total = gpu.memory->total;
      if (auto baseline = diagnose::baseline_of(gpu, run_pids)) {
        g.baseline = baseline->used;
        baselines_.push_back(*baseline);
      }
      record_.gpus.push_back(std::move(g));
    }
    sample(view);
  }

  void sample(const GpuView& view) {
    RunSample s;
    s.t = now();
    for (RunGpu& g : record_.gpus) {
      std::optional<Bytes> used;
      for (const Gpu& gpu : view.gpus) {
        if (gpu.index == g.index && gpu.memory) used = gpu.memory->used;
      }
      if (used && (!g.peak || *used > *g.peak)) g.peak = used;
      s.used.push_back(used);
    }
    record_.samples.push_back(std::move(s));
  }

  // Whether every GPU is back (diagnose::judge_return); notes each GPU's verdict. A GPU the
  // view lacks, or that gives no memory figure now, is not back.
  bool check_back(const GpuView& view, const std::set<Pid>& run_pids) {
    bool all_back = true;
    for (const diagnose::GpuBaseline& baseline : baselines_) {
      RunGpu* g = gpu(baseline.index);
      if (g == nullptr) continue;
      g->back = false;
      g->note = "GPU " + std::to_string(baseline.index) + " is no longer reported by NVML";
      for (const Gpu& now : view.gpus) {
        if (now.index != baseline.index) continue;
        if (auto judged = diagnose::judge_return(baseline, now, run_pids)) {
          g->after = judged->after;
          g->back = judged->back;
          g->note = judged->note;
        } else {
          g->note = "NVML gives no memory figure for GPU " + std::to_string(now.index) + " now";
        }
      }
      all_back = all_back && *g->back;
    }
    return all_back;
  }

  // No reading after the teardown: every GPU with a pre-run level is "not checked".
  void not_checked(const std::string& why) {
    for (const diagnose::GpuBaseline& baseline : baselines_) {
      if (RunGpu* g = gpu(baseline.index)) {
        g->back.reset();
        g->note = "not checked: " + why;
      }
    }
  }

  RunRecord& record() { return record_; }

 private:
  RunGpu* gpu(unsigned index) {
    for (RunGpu& g : record_.gpus) {
      if (g.index == index) return &g;
    }
    return nullptr;
  }

  const Settings& settings_;
  Clock::time_point started_;
  RunRecord record_;
  std::vector<diagnose::GpuBaseline> baselines_;
};

std::set<std::pair<Pid, std::uint64_t>> holder_identities(const diagnose::Input& input) {
  std::set<std::pair<Pid, std::uint64_t>> out;
  for (const Holder& h : input.holders) {
    if (!h.devices.empty()) out.insert({h.process.pid, h.process.start_ticks});
  }
  return out;
}

// Device holders that appeared during the run and are not part of it: a process the workload
// had started through something outside its containment, or another user's new job. Named,
// never signalled: nothing proves they are the run's.
std::vector<std::string> find_escaped(Gathered gathered,
                                      const std::set<std::pair<Pid, std::uint64_t>>& before,
                                      const std::set<Pid>& run_pids) {
  std::vector<std::string> lines;
  const Diagnosis diagnosis = diagnose::diagnose(std::move(gathered.input), {});
  for (const Holder& h : diagnosis.holders) {
    if (!h.visible || h.devices.empty() || h.klass == HolderClass::kMonitor) continue;
    if (h.process.pid == ::getpid() || run_pids.count(h.process.pid) > 0) continue;
    if (before.count({h.process.pid, h.process.start_ticks}) > 0) continue;
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

struct Contained {
  std::unique_ptr<ops::Containment> containment;
  ops::CgroupContainment* cgroup = nullptr;  // set in cgroup mode
};

Contained contain(const RunOptions& o, const Io& io) {
  Contained out;
  std::string why_not;
  if (o.no_cgroup) {
    why_not = "--no-cgroup was given";
  } else {
    auto parent =
        o.cgroup_parent.empty()
            ? ops::own_cgroup("/proc")
            : Result<ops::CgroupLocation>(ops::CgroupLocation{o.cgroup_parent, o.cgroup_parent});
    if (parent.ok()) {
      auto group = ops::CgroupGroup::create(*parent, fmt::format("gpuclean-run.{}", ::getpid()));
      if (group.ok()) {
        auto cgroup = std::make_unique<ops::CgroupContainment>(std::move(group).value());
        out.cgroup = cgroup.get();
        out.containment = std::move(cgroup);
        return out;
      }
      why_not = group.error().message();
    } else {
      why_not = parent.error().message();
    }
  }
  out.containment = std::make_unique<ops::SubreaperContainment>();
  io.err << "gpuclean: run: no cgroup (" << why_not
         << "); falling back to a child subreaper with the workload in its own session: "
         << out.containment->limits() << '\n';
  return out;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitDirty;
}

std::set<Pid> pids_of(const std::vector<ProcessInfo>& processes) {
  std::set<Pid> out;
  for (const ProcessInfo& p : processes) out.insert(p.pid);
  return out;
}

}  // namespace

void add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* run = app.add_subcommand(
      "run", "Run a workload so that nothing it starts outlives it: gpuclean run [OPTIONS] -- CMD");
  add_diagnosis_options(*run, o.check, HookScope::kAct);
  run->add_option("--timeout", o.timeout, "End the run after DURATION (exit 124)");
  run->add_option("--grace", o.grace, "Time between SIGTERM and SIGKILL at teardown")
      ->default_str("5s");
  run->add_option("--wait", o.wait, "How long to wait for exits and GPU memory at teardown")
      ->default_str("30s");
  run->add_option("--record", o.record_path, "Write a JSON record of the run to FILE");
  run->add_option("--sample-interval", o.sample_interval, "GPU memory sampling period for --record")
      ->default_str("1s");
  run->add_flag("--require-clean", o.require_clean,
                "Refuse to start (exit 125) unless `gpuclean check` passes");
  run->add_flag("--no-cgroup", o.no_cgroup,
                "Do not use a cgroup: child subreaper and own session only");
  run->add_flag("-q,--quiet", o.quiet, "Print only problems");
  add_cgroup_parent_hook(*run, o.cgroup_parent);
  // After "--" every word is the workload's, its own options included.
  run->add_option("command", o.command, "The workload: -- CMD [ARGS...]");
}

int run_run(const RunOptions& o, const Io& io) {
  // A reader of stderr that went away (`gpuclean run … 2>&1 | tee log`, and ^C killed tee)
  // must not kill gpuclean mid-teardown: writes fail with EPIPE instead. The workload gets the
  // default back (launch.cpp).
  (void)::signal(SIGPIPE, SIG_IGN);
  // One pidfd per process at teardown: a workload with thousands of leftovers must not run
  // out of descriptors (the soft limit is often 1024; the hard one is the limit).
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &files);
  }
  if (o.command.empty()) {
    io.err << "gpuclean: run: no command given (gpuclean run [OPTIONS] -- CMD [ARGS...])\n";
    return kExitUsage;
  }
  if (o.check.common.json) {
    io.err << "gpuclean: run: --json is not for run: the workload owns stdout; use --record FILE\n";
    return kExitUsage;
  }
  const std::optional<Settings> settings = parse_settings(o, io);
  if (!settings) return kExitUsage;

  // The device files and /proc for the GPU checks. The defaults cannot be a usage error, so
  // then this waits until the workload has started (it is a tenth of a millisecond of `run`'s
  // start budget, bench/run_bench.sh); files the user named are checked before anything runs.
  std::unique_ptr<Gatherer> gatherer_owner;
  auto open_gatherer = [&]() -> std::optional<GatherError> {
    auto opened = Gatherer::open(o.check.common);
    if (auto* error = std::get_if<GatherError>(&opened)) return *error;
    gatherer_owner = std::move(std::get<std::unique_ptr<Gatherer>>(opened));
    return std::nullopt;
  };
  if (!o.check.common.device_globs.empty() || o.require_clean) {
    if (auto error = open_gatherer()) {
      io.err << "gpuclean: run: " << error->message << '\n';
      return exit_code_of(*error) == kExitUsage ? kExitUsage : kExitNotStarted;
    }
  }
  // NVML is asked only through a sampler process (gpu_sampler.h), never in this one.
  std::shared_ptr<GpuSampler> sampler;
  ops::Containment* containment_ptr = nullptr;  // set once the run is contained
  auto attach_sampler = [&] {
    if (o.check.common.no_nvml) return;
    auto started = GpuSampler::start(o.check.common);
    if (!started.ok()) {
      // Never NVML in this process instead: say it failed.
      gatherer_owner->use_gpu_source(
          {nvml::OpenedSource::State::kFailed, nullptr, started.error().message()});
      return;
    }
    sampler = std::move(started).value();
    if (containment_ptr != nullptr) {
      containment_ptr->exclude(sampler->pid(), sampler->start_ticks());
    }
    gatherer_owner->use_gpu_source(open_sampler_source(sampler, kNvmlTimeout));
  };
  auto detach_sampler = [&] {
    if (gatherer_owner) gatherer_owner->use_gpu_source({});
    sampler.reset();
  };

  if (o.require_clean) {
    attach_sampler();
    // The check's lines go to stderr: stdout is the workload's.
    const int verdict = run_check_on(o.check, gatherer_owner->collect(), Io{io.err, io.err});
    if (verdict == kExitUsage) return kExitUsage;
    if (verdict != kExitClean) {
      io.err << "gpuclean: run: refusing to start: "
             << (verdict == kExitDirty ? "the GPUs are not clean (--require-clean)"
                                       : "the GPUs could not be checked")
             << '\n';
      return kExitNotStarted;
    }
  }

  std::optional<RecordFile> record_file;
  if (!o.record_path.empty()) {
    auto file = RecordFile::create(o.record_path);
    if (!file.ok()) {
      io.err << "gpuclean: run: --record: " << file.error().message() << '\n';
      return kExitNotStarted;
    }
    record_file = std::move(file).value();
  }
  auto proc = procfs::ProcFs::open("/proc");
  if (!proc.ok()) {
    io.err << "gpuclean: run: " << proc.error().message() << '\n';
    return kExitNotStarted;
  }

  const char* path_env = std::getenv("PATH");
  auto program = ops::resolve_program(
      o.command.front(), path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin");
  const std::string shown = output::escape_terminal(o.command.front());
  if (!program.ok()) {
    const bool missing = program.error().errnum == ENOENT;
    io.err << "gpuclean: run: " << shown
           << (missing ? ": command not found" : ": not executable (permission denied)") << '\n';
    return missing ? kExitNotFound : kExitNotExecutable;
  }

  // Signals are blocked from here on: one arriving before the loop waits in the queue.
  auto supervisor = ops::Supervisor::create();
  if (!supervisor.ok()) {
    io.err << "gpuclean: run: " << supervisor.error().message() << '\n';
    return kExitNotStarted;
  }
  Contained contained = contain(o, io);
  const ops::Containment& containment = *contained.containment;
  containment_ptr = contained.containment.get();
  if (sampler) containment_ptr->exclude(sampler->pid(), sampler->start_ticks());

  RunState state(*settings, o.command);
  RunRecord& record = state.record();
  record.mode = containment.mode();
  record.mode_note = containment.limits();
  if (contained.cgroup != nullptr) {
    record.cgroup = contained.cgroup->group().location().path;
    if (!o.quiet) {
      io.err << "gpuclean: run: in cgroup " << output::escape_terminal(record.cgroup)
             << " (if gpuclean itself is killed: gpuclean kill --cgroup "
             << output::escape_terminal(record.cgroup) << ")\n";
    }
  }

  ops::LaunchOptions launch_options;
  if (contained.cgroup != nullptr) {
    launch_options.cgroup_dir_fd = contained.cgroup->group().dir_fd();
    launch_options.cgroup_procs_fd = contained.cgroup->group().procs_fd();
  }
  launch_options.new_session = contained.cgroup == nullptr;
  launch_options.parent_death_signal = SIGKILL;
  auto launched = ops::launch(*program, o.command, launch_options);
  if (!launched.ok()) {
    const int err = launched.error().errnum;
    io.err << "gpuclean: run: " << shown << ": could not " << launched.error().message() << '\n';
    if (launched.error().context == "exec") {
      return err == ENOENT ? kExitNotFound : kExitNotExecutable;
    }
    return kExitNotStarted;
  }
  record.pid = launched->pid;
  state.event("start", fmt::format("pid {} in {} mode", launched->pid, record.mode));

  // The pre-run state, read while the workload starts (NVML's init alone is ~17 ms, more than
  // the whole start budget); memory the workload's own processes hold by then is left out.
  if (!gatherer_owner) {
    if (auto error = open_gatherer()) {
      // The workload runs already: supervise it all the same, without the GPU checks.
      io.err << "gpuclean: run: " << error->message << ": the GPUs will not be verified\n";
    }
  }
  Gathered before;
  if (gatherer_owner) {
    if (!sampler) attach_sampler();
    before = gatherer_owner->collect();
  }
  if (before.nvml_state == NvmlState::kFailed) {
    io.err << "gpuclean: run: NVML is failing (" << output::escape_terminal(before.nvml_message)
           << "): the GPUs' memory will not be verified\n";
  }
  const auto holders_before = holder_identities(before.input);
  std::set<Pid> run_pids = pids_of(containment.members(*proc));
  run_pids.insert(launched->pid);
  record.gpu_source =
      before.input.gpu_view ? (o.check.common.test_gpu_source.empty() ? "nvml" : "test") : "none";
  if (before.input.gpu_view) state.set_baseline(*before.input.gpu_view, run_pids);
  const bool sampling = record_file.has_value() && before.input.gpu_view.has_value() && sampler;
  if (!sampling) detach_sampler();  // nothing of the driver's open while the workload runs

  ops::SuperviseOptions supervise_options;
  supervise_options.timeout = settings->timeout;
  if (sampling) {
    supervise_options.sample_every = settings->sample;
    supervise_options.watch_fds = {sampler->reply_fd()};
  }
  supervise_options.child_in_our_process_group = !launch_options.new_session;
  ops::SuperviseHooks hooks;
  // Samples are asked for and read without waiting: a hung driver stalls only the sampler.
  hooks.on_sample = [&] { sampler->request(); };
  hooks.on_ready = [&](int) {
    if (auto answer = sampler->receive(); answer && answer->view) state.sample(*answer->view);
  };
  hooks.on_event = [&](const std::string& kind, const std::string& detail) {
    state.event(kind, detail);
    if (kind == "interrupt" || (kind == "timeout" && !o.quiet)) {
      io.err << "gpuclean: run: " << (kind == "timeout" ? "--timeout passed" : detail) << '\n';
    }
  };
  const ops::RunEnd end = supervisor->supervise(*launched, supervise_options, hooks);

  // What the GPUs hold as the workload ends: the leftovers' memory, the record's last word
  // before the teardown (a periodic sample may be most of an interval old).
  if (sampling) {
    if (auto answer = sampler->query(kLastSampleTimeout); answer.view) state.sample(*answer.view);
  }
  // Teardown: everything still in the run, however it detached.
  ops::TeardownOptions teardown_options;
  teardown_options.grace = settings->grace;
  teardown_options.wait = settings->wait;
  const double teardown_at = state.now();
  state.event("teardown", "");
  const ops::GroupTeardown teardown =
      ops::tear_down_group(*proc, containment, *supervisor, teardown_options);
  state.event("teardown-done",
              fmt::format("{} found, {} remaining", teardown.found.size(), teardown.remaining()));
  for (std::size_t i = 0; i < teardown.found.size(); ++i) {
    const ProcessInfo& p = teardown.found[i];
    const ops::TargetOutcome& outcome = teardown.outcomes[i];
    run_pids.insert(p.pid);
    // The workload's main process is not a leftover when a timeout or interrupt ended it.
    if (p.pid == launched->pid) continue;
    RunLeftover leftover;
    leftover.pid = p.pid;
    leftover.ppid = p.ppid;
    leftover.comm = p.comm;
    leftover.cmdline = p.cmdline;
    leftover.signals = outcome.signals;
    leftover.outcome = outcome.state == ops::TargetOutcome::State::kGone        ? "gone"
                       : outcome.state == ops::TargetOutcome::State::kRemaining ? "remaining"
                                                                                : "skipped";
    leftover.reason = outcome.reason;
    leftover.t = teardown_at;
    record.leftovers.push_back(std::move(leftover));
  }

  if (end == ops::RunEnd::kTimeout) {
    record.end = "timeout";
  } else if (end == ops::RunEnd::kEscalated) {
    record.end = "interrupted";
  } else if (end == ops::RunEnd::kFailed) {
    record.end = "supervision-failed";
  }
  if (auto status = supervisor->child_status()) {
    if (WIFEXITED(*status)) record.exit_status = WEXITSTATUS(*status);
    if (WIFSIGNALED(*status)) record.exit_signal = WTERMSIG(*status);
    if (record.end.empty()) record.end = WIFSIGNALED(*status) ? "signaled" : "exited";
    record.exit_code = end == ops::RunEnd::kTimeout ? kExitTimeout : exit_code_of(*status);
  } else {
    // The main process itself survived SIGKILL (frozen, or stuck in the kernel).
    if (record.end.empty()) record.end = "exited";
    record.exit_code = end == ops::RunEnd::kTimeout ? kExitTimeout : kExitDirty;
  }

  // Verification: the GPUs back at their pre-run level (a deadline poll; the driver frees a
  // context ~0.1 s after its last holder exits, FACTS.md). No answer is "not checked", never
  // "back".
  if (before.input.gpu_view && gatherer_owner) {
    if (!sampler) attach_sampler();
    const auto deadline = Clock::now() + settings->wait;
    for (;;) {
      auto view = gatherer_owner->query_gpu_view();
      if (!view) {
        record.gpu_check = "not-checked";
        state.not_checked("NVML gave no answer after the teardown");
        break;
      }
      state.sample(*view);
      const bool back = state.check_back(*view, run_pids);
      record.gpu_check = back ? "back" : "not-back";
      if (back || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(kVerifyPoll);
    }
  }
  if (gatherer_owner) {
    record.escaped = find_escaped(gatherer_owner->collect(), holders_before, run_pids);
  }
  state.event("verified", record.gpu_check);
  // The group itself must be empty too: a process no listing showed would still be in it.
  const bool group_populated = contained.cgroup != nullptr &&
                               contained.cgroup->group().populated().ok() &&
                               *contained.cgroup->group().populated();
  if (group_populated && teardown.remaining() == 0) {
    state.event("problem", "the cgroup still has processes after the teardown");
    io.err << "gpuclean: run: cgroup " << output::escape_terminal(record.cgroup)
           << " still has processes after the teardown\n";
  }
  record.clean = teardown.remaining() == 0 && !group_populated &&
                 (record.gpu_check == "back" || record.gpu_check == "none");
  if (!record.clean && record.exit_code == kExitClean) record.exit_code = kExitDirty;
  record.duration = state.now();

  if (contained.cgroup != nullptr && !group_populated) {
    if (auto removed = contained.cgroup->group().remove(); !removed.ok()) {
      io.err << "gpuclean: run: " << removed.error().message() << '\n';
    }
  }
  for (const output::SummaryLine& line : output::run_summary_lines(record)) {
    if (!o.quiet || line.problem) io.err << "gpuclean: run: " << line.text << '\n';
  }
  if (group_populated) {
    io.err << "gpuclean: run: cgroup " << output::escape_terminal(record.cgroup)
           << " is left in place with what remains in it\n";
  }
  if (record_file) {
    std::ostringstream text;
    output::write_json(text, output::to_json(record, host_name()));
    if (auto written = record_file->write(text.str()); !written.ok()) {
      io.err << "gpuclean: run: --record: " << written.error().message() << '\n';
      if (record.exit_code == kExitClean) record.exit_code = kExitRuntime;
    }
  }
  return record.exit_code;
}

}  // namespace gpuclean::cli
