#include "cli/run_command.h"
#include "cli/help.h"
#include "cli/test_hooks.h"
#include "cli/usage_error.h"

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <variant>

#include "collect/run_gpu_watch.h"
#include "core/atomic_file.h"
#include "core/duration.h"
#include "core/run_record.h"
#include "ops/launch.h"
#include "ops/run_session.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/run_record.h"

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

}  // namespace

void add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* run = app.add_subcommand(
      "run", "Run a workload so that nothing it starts outlives it, and check the GPUs after");
  // No --json: the workload owns stdout (--record FILE is the machine-readable account).
  add_diagnosis_options(*run, o.check, HookScope::kAct, {.json = false, .gpus = true});
  run->add_option("--timeout", o.timeout, "End the run after DURATION, with exit 124")
      ->option_text("DURATION");
  run->add_option("--grace", o.grace, "Time between SIGTERM and SIGKILL at teardown (default: 5s)")
      ->option_text("DURATION");
  run->add_option("--wait", o.wait,
                  "How long to wait for exits and GPU memory at teardown (default: 30s)")
      ->option_text("DURATION");
  run->add_option("--record", o.record_path, "Write a JSON record of the run to FILE")
      ->option_text("FILE");
  run->add_option("--sample-interval", o.sample_interval,
                  "GPU memory sampling period for --record (default: 1s)")
      ->option_text("DURATION");
  run->add_flag("--require-clean", o.require_clean,
                "Refuse to start, with exit 125, unless `gpuclean check` passes");
  run->add_flag("--no-cgroup", o.no_cgroup,
                "Do not use a cgroup: child subreaper and own session only");
  run->add_flag("-q,--quiet", o.quiet, "Print only problems");
  add_cgroup_parent_hook(*run, o.cgroup_parent);
  // After "--" every word is the workload's, its own options included.
  run->add_option("command", o.command, "The workload and its arguments, after --")
      ->option_text("-- CMD [ARGS...]");
  set_help_footer(
      *run,
      {{"gpuclean run -- python serve.py --port 8000", "serve; ^C tears down everything"},
       {"gpuclean run --require-clean --timeout 2h -- ./bench.sh", "a guarded benchmark"},
       {"gpuclean run --record run.json -- python train.py", "with a memory record to plot"}},
      {"N  the workload's own exit status; 128+N when signal N ended it",
       "1  the workload succeeded but something outlived it or a GPU is not back", "2  usage error",
       "3  the workload succeeded but --record could not be written", "124  --timeout",
       "125  not started (gpuclean failed, or --require-clean found dirt)", "126  not executable",
       "127  not found"});
}

int run_run(const RunOptions& o, const Io& io) {
  ops::prepare_supervisor_process();  // before the first line on stderr (run_session.h)
  if (o.command.empty()) {
    io.err << usage_message("run", "no command given: gpuclean run [OPTIONS] -- CMD [ARGS...]");
    return kExitUsage;
  }
  const std::optional<Settings> settings = parse_settings(o, io);
  if (!settings) return kExitUsage;
  auto say = [&io](const std::string& line) {
    io.err << "gpuclean: run: " << output::escape_terminal(line) << '\n';
  };

  // The GPU side (device files, /proc, NVML through a sampler process). The defaults cannot be
  // a usage error, so then this waits until the workload has started (it is a tenth of a
  // millisecond of `run`'s start budget, bench/run_bench.sh); files the user named are
  // checked before anything runs.
  collect::RunGpuOptions gpu_options;
  gpu_options.collect = o.check.common;
  gpu_options.nvml_timeout = o.check.common.nvml_timeout;  // --nvml-timeout bounds run's too
  gpu_options.gpus = settings->gpus;
  gpu_options.wait = settings->wait;
  std::unique_ptr<collect::RunGpuWatch> gpus;
  auto open_gpus = [&]() -> std::optional<collect::GatherError> {
    auto opened = collect::RunGpuWatch::open(gpu_options);
    if (auto* error = std::get_if<collect::GatherError>(&opened)) return *error;
    gpus = std::move(std::get<std::unique_ptr<collect::RunGpuWatch>>(opened));
    return std::nullopt;
  };
  if (!o.check.common.device_globs.empty() || o.require_clean) {
    if (auto error = open_gpus()) {
      io.err << "gpuclean: run: " << error->message << '\n';
      return exit_code_of(*error) == kExitUsage ? kExitUsage : kExitNotStarted;
    }
  }
  if (o.require_clean) {
    // The check's lines go to stderr: stdout is the workload's.
    const int verdict = run_check_on(o.check, gpus->collect(), Io{io.err, io.err});
    if (verdict == kExitUsage) return kExitUsage;
    if (verdict != kExitClean) {
      io.err << "gpuclean: run: refusing to start: "
             << (verdict == kExitDirty ? "the GPUs are not clean (--require-clean)"
                                       : "the GPUs could not be checked")
             << '\n';
      return kExitNotStarted;
    }
  }

  // The record file is created before the workload starts, so that a typo in its path costs
  // nothing; it is filled and renamed into place at the end (core/atomic_file.h).
  std::optional<AtomicFile> record_file;
  if (!o.record_path.empty()) {
    auto file = AtomicFile::create(o.record_path);
    if (!file.ok()) {
      io.err << "gpuclean: run: --record: cannot write " << output::escape_terminal(o.record_path)
             << " (" << output::escape_terminal(file.error().message()) << ")\n";
      return kExitNotStarted;
    }
    record_file = std::move(file).value();
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

  RunLog log;
  log.record().command = o.command;
  log.record().started_at = unix_now();
  ops::RunSessionOptions session_options;
  session_options.no_cgroup = o.no_cgroup;
  session_options.cgroup_parent = o.cgroup_parent;
  session_options.say = say;
  auto created = ops::RunSession::create(session_options, log);
  if (!created.ok()) {
    io.err << "gpuclean: run: " << created.error().message() << '\n';
    return kExitNotStarted;
  }
  // From launch() until tear_down(), destroying the session ends the whole run (its guard):
  // an exception or a return on the way cannot leave the workload running.
  ops::RunSession& session = **created;
  const RunRecord& record = log.record();
  if (session.group() == nullptr) {
    say("no cgroup (" + session.fallback_reason() +
        "); falling back to a child subreaper with the workload in its own session: " +
        record.mode_note);
  } else if (!o.quiet) {
    say("in cgroup " + record.cgroup + " (if gpuclean itself is killed: gpuclean kill --cgroup " +
        record.cgroup + ")");
  }
  if (gpus) {
    gpus->on_sampler(
        [&session](Pid pid, std::uint64_t start) { session.containment().exclude(pid, start); });
  }

  if (auto launched = session.launch(*program, o.command); !launched.ok()) {
    const int err = launched.error().errnum;
    io.err << "gpuclean: run: " << shown << ": could not " << launched.error().message() << '\n';
    if (launched.error().context == "exec") {
      return err == ENOENT ? kExitNotFound : kExitNotExecutable;
    }
    return kExitNotStarted;
  }

  // The pre-run state, read while the workload starts (NVML's init alone is ~17 ms, more than
  // the whole start budget); memory the workload's own processes hold by then is left out.
  if (!gpus) {
    if (auto error = open_gpus()) {
      // The workload runs already: supervise it all the same, without the GPU checks.
      say(error->message + ": the GPUs will not be verified");
    } else {
      gpus->on_sampler(
          [&session](Pid pid, std::uint64_t start) { session.containment().exclude(pid, start); });
    }
  }
  // The pre-run level: /proc now, NVML's answer whenever it comes (the supervision below does
  // not wait for it).
  if (gpus) gpus->begin_baseline(record_file.has_value());
  auto members = [&session] { return session.scan_members(); };
  auto say_nvml = [&](std::optional<NvmlState> baseline) {
    if (baseline == NvmlState::kFailed) {
      say("NVML is failing (" + gpus->nvml_message() + "): the GPUs' memory will not be verified");
    }
  };

  ops::SuperviseOptions supervise_options;
  supervise_options.timeout = settings->timeout;
  const std::optional<int> gpu_fd = gpus ? gpus->watch_fd() : std::nullopt;
  if (gpu_fd) {
    supervise_options.watch_fds = {*gpu_fd};
    if (record_file) supervise_options.sample_every = settings->sample;
  }
  ops::SuperviseHooks hooks;
  hooks.on_sample = [&] { gpus->request_sample(); };
  hooks.on_ready = [&](int) { say_nvml(gpus->receive(log, members)); };
  hooks.on_event = [&](const std::string& kind, const std::string& detail) {
    if (kind == "interrupt" || (kind == "timeout" && !o.quiet)) {
      say(kind == "timeout" ? "--timeout passed" : detail);
    }
    // The first ^C (or SIGTERM) goes to the workload, which may ignore it: say what happened
    // and how to end the run, or the terminal shows nothing at all.
    const bool first_interrupt = detail.rfind("INT ", 0) == 0 || detail.rfind("TERM ", 0) == 0;
    if (kind == "signal" && first_interrupt) {
      say("SIG" + detail + "; press ^C again (or send another SIGTERM) to tear it down");
    }
  };
  const ops::RunEnd end = session.supervise(supervise_options, hooks);
  // What the GPUs hold as the workload ends: the leftovers' memory, the record's last word
  // before the teardown (a periodic sample may be most of an interval old).
  if (gpus && record_file) gpus->last_sample(log);

  // Teardown: everything still in the run, however it detached.
  ops::TeardownOptions teardown_options;
  teardown_options.grace = settings->grace;
  teardown_options.wait = settings->wait;
  session.tear_down(end, teardown_options);

  // Verification: the GPUs back at their pre-run level; no answer is "not checked", never
  // "back". A baseline still unanswered is awaited first (bounded; after the teardown, which
  // must not wait on the driver).
  if (gpus) {
    // Every process the run had, not its members now (none after the teardown).
    say_nvml(gpus->finish_baseline(log, [&session] { return session.run_pids(); }));
    gpus->verify(log, session.run_pids(), session.workload_start_ticks());
    log.record().escaped = gpus->escaped(session.run_pids(), session.workload_start_ticks());
  }
  log.event("verified", std::string(to_string(record.gpu_check)));
  session.finish();

  for (const output::SummaryLine& line : output::run_summary_lines(record)) {
    if (!o.quiet || line.problem) io.err << "gpuclean: run: " << line.text << '\n';
  }
  int exit_code = record.exit_code;
  if (record_file) {
    std::ostringstream text;
    output::write_json(text, output::to_json(record, host_name()));
    if (auto written = record_file->commit(text.str()); !written.ok()) {
      io.err << "gpuclean: run: --record: cannot write " << output::escape_terminal(o.record_path)
             << " (" << output::escape_terminal(written.error().message()) << ")\n";
      if (exit_code == kExitClean) exit_code = kExitRuntime;
    }
  }
  return exit_code;
}

}  // namespace gpuclean::cli
