#include "cli/run_command.h"
#include "cli/usage_error.h"
#include "core/diagnostics.h"

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <variant>

#include "collect/gather.h"
#include "collect/run_gpu_watch.h"
#include "core/atomic_file.h"
#include "core/duration.h"
#include "core/run_record.h"
#include "ops/launch.h"
#include "ops/run_session.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/run_record.h"
#include "recorder/action_socket.h"

namespace gpuclean::cli {
namespace {

constexpr int kExitNotStarted = 125;
constexpr int kExitNotExecutable = 126;
constexpr int kExitNotFound = 127;

struct Settings {
  std::optional<Duration> timeout;
  Duration grace{};
  Duration wait{};
  Duration sample{};
  std::optional<std::set<unsigned>> gpus;
};

std::optional<Settings> parse_settings(const RunOptions& o, const Io& io) {
  auto fail = [&io](const std::string& what) -> std::optional<Settings> {
    say(io.err, "run") << what << '\n';
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

// NVML failing at the pre-run look: said once, since the memory will not be verified.
void say_nvml_failing(std::optional<NvmlState> baseline, const collect::RunGpuWatch& gpus,
                      const std::function<void(const std::string&)>& say) {
  if (baseline == NvmlState::kFailed) {
    say("NVML is failing (" + gpus.nvml_message() + "): the GPUs' memory will not be verified");
  }
}

// The GPU side of a run (device files, /proc, NVML through a sampler process): opened before
// the workload starts when the user named files or asked --require-clean (their errors must
// come first), else while it starts.
class GpuSide {
 public:
  explicit GpuSide(const RunOptions& o, const Settings& settings) {
    options_.collect = o.check.common;
    options_.nvml_timeout = o.check.common.nvml_timeout;  // --nvml-timeout bounds run's too
    options_.gpus = settings.gpus;
    options_.wait = settings.wait;
  }
  std::optional<collect::GatherError> open() {
    auto opened = collect::RunGpuWatch::open(options_);
    if (auto* error = std::get_if<collect::GatherError>(&opened)) return *error;
    watch_ = std::move(std::get<std::unique_ptr<collect::RunGpuWatch>>(opened));
    return std::nullopt;
  }
  [[nodiscard]] collect::RunGpuWatch* watch() const { return watch_.get(); }

 private:
  collect::RunGpuOptions options_;
  std::unique_ptr<collect::RunGpuWatch> watch_;
};

// What must hold before anything runs: the GPUs opened when named or guarded (and clean under
// --require-clean), the record file created (a typo in its path costs nothing), the program
// found. An exit code when it does not hold.
struct Ready {
  std::optional<AtomicFile> record_file;
  std::string program;
};

std::variant<Ready, int> get_ready(const RunOptions& o, GpuSide& gpus, const Io& io) {
  if (!o.check.common.device_globs.empty() || o.require_clean) {
    if (auto error = gpus.open()) {
      say(io.err, "run") << error->message << '\n';
      return exit_code_of(*error) == kExitUsage ? kExitUsage : kExitNotStarted;
    }
  }
  if (o.require_clean) {
    // The check's lines go to stderr: stdout is the workload's.
    const int verdict = run_check_on(o.check, gpus.watch()->collect(), Io{io.err, io.err});
    if (verdict == kExitUsage) return kExitUsage;
    if (verdict != kExitClean) {
      say(io.err, "run") << "refusing to start: "
                         << (verdict == kExitDirty ? "the GPUs are not clean (--require-clean)"
                                                   : "the GPUs could not be checked")
                         << '\n';
      return kExitNotStarted;
    }
  }
  Ready ready;
  // Filled and renamed into place at the end (core/atomic_file.h).
  if (!o.record_path.empty()) {
    auto file = AtomicFile::create(o.record_path);
    if (!file.ok()) {
      say(io.err, "run") << "--record: cannot write " << output::escape_terminal(o.record_path)
                         << " (" << output::escape_terminal(file.error().message()) << ")\n";
      return kExitNotStarted;
    }
    ready.record_file = std::move(file).value();
  }
  const char* path_env = std::getenv("PATH");
  auto program = ops::resolve_program(
      o.command.front(), path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin");
  if (!program.ok()) {
    const bool missing = program.error().errnum == ENOENT;
    say(io.err, "run") << output::escape_terminal(o.command.front())
                       << (missing ? ": command not found" : ": not executable (permission denied)")
                       << '\n';
    return missing ? kExitNotFound : kExitNotExecutable;
  }
  ready.program = *program;
  return ready;
}

// The session (a cgroup, or the fallback), said; then the workload launched in it. From
// launch() until tear_down(), destroying the session ends the whole run (its guard): an
// exception or a return on the way cannot leave the workload running.
std::variant<std::unique_ptr<ops::RunSession>, int> launch_workload(
    const RunOptions& o, const Ready& ready, GpuSide& gpus, RunLog& log,
    const std::function<void(const std::string&)>& say, const Io& io) {
  ops::RunSessionOptions session_options;
  session_options.no_cgroup = o.no_cgroup;
  session_options.cgroup_parent = o.cgroup_parent;
  session_options.say = say;
  auto created = ops::RunSession::create(session_options, log);
  if (!created.ok()) {
    gpuclean::say(io.err, "run") << created.error().message() << '\n';
    return kExitNotStarted;
  }
  std::unique_ptr<ops::RunSession> session = std::move(created).value();
  const RunRecord& record = log.record();
  if (session->group() == nullptr) {
    say("no cgroup (" + session->fallback_reason() +
        "); falling back to a child subreaper with the workload in its own session: " +
        record.mode_note);
  } else if (!o.quiet) {
    say("in cgroup " + record.cgroup + " (if gpuclean itself is killed: gpuclean kill --cgroup " +
        record.cgroup + ")");
  }
  ops::RunSession* in = session.get();
  auto exclude_sampler = [in](Pid pid, std::uint64_t start) {
    in->containment().exclude(pid, start);
  };
  if (gpus.watch() != nullptr) gpus.watch()->on_sampler(exclude_sampler);
  if (auto launched = session->launch(ready.program, o.command); !launched.ok()) {
    const int err = launched.error().errnum;
    gpuclean::say(io.err, "run") << output::escape_terminal(o.command.front()) << ": could not "
                                 << launched.error().message() << '\n';
    if (launched.error().context == "exec") {
      return err == ENOENT ? kExitNotFound : kExitNotExecutable;
    }
    return kExitNotStarted;
  }
  // The pre-run state, read while the workload starts (NVML's init alone is ~17 ms, more than
  // the whole start budget); memory the workload's own processes hold by then is left out.
  if (gpus.watch() == nullptr) {
    if (auto error = gpus.open()) {
      // The workload runs already: supervise it all the same, without the GPU checks.
      say(error->message + ": the GPUs will not be verified");
    } else {
      gpus.watch()->on_sampler(exclude_sampler);
    }
  }
  return session;
}

// Supervises the workload until it ends (or --timeout, or a second ^C), sampling the GPUs for
// --record; what the user is told on the way.
ops::RunEnd supervise(const RunOptions& o, const Settings& settings, ops::RunSession& session,
                      collect::RunGpuWatch* gpus, bool recording, RunLog& log,
                      const std::function<void(const std::string&)>& say) {
  // The pre-run level: /proc now, NVML's answer whenever it comes (the supervision below does
  // not wait for it).
  if (gpus != nullptr) gpus->begin_baseline(recording);
  auto members = [&session] { return session.scan_members(); };
  ops::SuperviseOptions supervise_options;
  supervise_options.timeout = settings.timeout;
  const std::optional<int> gpu_fd = gpus != nullptr ? gpus->watch_fd() : std::nullopt;
  if (gpu_fd) {
    supervise_options.watch_fds = {*gpu_fd};
    if (recording) supervise_options.sample_every = settings.sample;
  }
  ops::SuperviseHooks hooks;
  hooks.on_sample = [&] { gpus->request_sample(); };
  hooks.on_ready = [&](int) { say_nvml_failing(gpus->receive(log, members), *gpus, say); };
  hooks.on_event = [&](RunEventKind kind, const std::string& detail) {
    if (kind == RunEventKind::kInterrupt || (kind == RunEventKind::kTimeout && !o.quiet)) {
      // What happens next, not the summary's "timed out" said twice (issue 50).
      say(kind == RunEventKind::kTimeout ? "--timeout reached: tearing the workload down" : detail);
    }
    // The first ^C (or SIGTERM) goes to the workload, which may ignore it: say what happened
    // and how to end the run, or the terminal shows nothing at all.
    const bool first_interrupt = detail.rfind("INT ", 0) == 0 || detail.rfind("TERM ", 0) == 0;
    if (kind == RunEventKind::kSignal && first_interrupt) {
      say("SIG" + detail + "; press ^C again (or send another SIGTERM) to tear it down");
    }
  };
  return session.supervise(supervise_options, hooks);
}

// Which files the teardown looks for in what it finds (the leftovers' lines name them): the
// GPU side's selection, made again as the workload ends. None when the GPU side did not open.
void watch_devices(const RunOptions& o, const GpuSide& gpus, ops::RunSession& session) {
  if (gpus.watch() == nullptr) return;
  if (auto files = collect::select_device_files(o.check.common); files.ok()) {
    session.watch_devices(std::move(files).value());
  }
}

// --fail-on-leftovers: a workload that succeeded but left processes behind (ended or not) fails
// the run with 1, as something that outlived it does (docs/reference.md "run").
void fail_on_leftovers(const RunOptions& o, RunRecord& record) {
  if (o.fail_on_leftovers && !record.leftovers.empty() && record.exit_code == kExitClean) {
    record.exit_code = kExitDirty;
  }
}

// The summary lines, and the record written; the run's exit code (3 when the record could not
// be written after a workload that succeeded).
int report(const RunOptions& o, const RunLog& log, std::optional<AtomicFile>& record_file,
           const Io& io) {
  const RunRecord& record = log.record();
  for (const output::SummaryLine& line : output::run_summary_lines(record, o.fail_on_leftovers)) {
    if (!o.quiet || line.problem) say(io.err, "run") << line.text << '\n';
  }
  int exit_code = record.exit_code;
  if (record_file) {
    std::ostringstream text;
    output::write_json(text, output::to_json(record, host_name()));
    if (auto written = record_file->commit(text.str()); !written.ok()) {
      say(io.err, "run") << "--record: cannot write " << output::escape_terminal(o.record_path)
                         << " (" << output::escape_terminal(written.error().message()) << ")\n";
      if (exit_code == kExitClean) exit_code = kExitRuntime;
    }
  }
  return exit_code;
}

}  // namespace

int run_run(const RunOptions& o, const Io& io) {
  ops::prepare_supervisor_process();  // before the first line on stderr (run_session.h)
  if (o.command.empty()) {
    io.err << usage_message("run", "no command given: gpuclean run [OPTIONS] -- CMD [ARGS...]");
    return kExitUsage;
  }
  const std::optional<Settings> settings = parse_settings(o, io);
  if (!settings) return kExitUsage;
  auto say = [&io](const std::string& line) {
    gpuclean::say(io.err, "run") << output::escape_terminal(line) << '\n';
  };
  GpuSide gpus(o, *settings);
  auto ready = get_ready(o, gpus, io);
  if (const int* code = std::get_if<int>(&ready)) return *code;
  Ready& r = std::get<Ready>(ready);

  RunLog log;
  log.record().command = o.command;
  log.record().started_at = unix_now();
  auto launched = launch_workload(o, r, gpus, log, say, io);
  if (const int* code = std::get_if<int>(&launched)) return *code;
  ops::RunSession& session = *std::get<std::unique_ptr<ops::RunSession>>(launched);
  collect::RunGpuWatch* watch = gpus.watch();
  const bool recording = r.record_file.has_value();
  const ops::RunEnd end = supervise(o, *settings, session, watch, recording, log, say);
  // What the GPUs hold as the workload ends: the leftovers' memory, the record's last word
  // before the teardown (a periodic sample may be most of an interval old).
  if (watch != nullptr && recording) watch->last_sample(log);

  // Teardown: everything still in the run, however it detached; what each leftover held is
  // read first.
  watch_devices(o, gpus, session);
  ops::TeardownOptions teardown_options;
  teardown_options.grace = settings->grace;
  teardown_options.wait = settings->wait;
  session.tear_down(end, teardown_options);

  // Verification: the GPUs back at their pre-run level; no answer is "not checked", never
  // "back". A baseline still unanswered is awaited first (bounded; after the teardown, which
  // must not wait on the driver). Every process the run had, not its members now (none after
  // the teardown).
  if (watch != nullptr) {
    say_nvml_failing(watch->finish_baseline(log, [&session] { return session.run_pids(); }), *watch,
                     say);
    watch->verify(log, session.run_pids(), session.workload_start_ticks());
    log.record().escaped = watch->escaped(session.run_pids(), session.workload_start_ticks());
  }
  log.event(RunEventKind::kVerified, std::string(to_string(log.record().gpu_check)));
  session.finish();
  fail_on_leftovers(o, log.record());
  const int exit_code = report(o, log, r.record_file, io);
  // Told to the flight recorder, if one listens; never waited on.
  recorder::send_action(recorder::action_socket_path(),
                        output::run_action_json(log.record(), exit_code)
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return exit_code;
}

}  // namespace gpuclean::cli
