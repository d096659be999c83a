// The options, arguments and help of the commands that act, serve or print scripts: kill, run,
// top, metrics and completion (cli/command_line.h).
#include "cli/command_line.h"

#include <algorithm>
#include <string>
#include <vector>

#include "cli/help.h"
#include "cli/usage_checks.h"
#include "completion/scripts.h"

namespace gpuclean::cli {

namespace {

// kill's examples and exit codes, under its options.
void set_kill_help_footer(CLI::App& kill) {
  set_help_footer(
      kill,
      {{"gpuclean kill 72309", "72309 and its descendants, after showing the plan"},
       {"gpuclean kill --leftovers --yes",
        "every dead job: orphan, heir, zombie-leader and stuck holders with their descendants"},
       {"gpuclean kill --gpu 3 --dry-run", "what holding GPU 3 would be ended; nothing is"},
       {"gpuclean kill --signal INT --grace 30s 72309", "SIGINT, then SIGKILL after 30 s"}},
      {"0  every target gone and its memory released (--leftovers: no leftover left), or "
       "nothing to kill",
       "1  a target, its memory or a leftover remains, a PID that does not exist, or the plan "
       "was not confirmed",
       "2  usage error: no selector, a protected PID, selecting by GPU without NVML",
       "3  NVML failed: the targets were signalled, their memory not verified"});
}

}  // namespace

void add_kill_command(CLI::App& app, KillOptions& o) {
  CLI::App* kill = app.add_subcommand(
      "kill", "Tear down exactly the selected processes, escalate, and verify they are gone");
  add_common_options(*kill, o.common, HookScope::kAct);
  add_valued(*kill, "pids", o.pids,
             "These processes and their descendants; PID@START: only while PID is still "
             "the process that started at START (clock ticks, start_ticks in --json)",
             "PID[@START]...")
      ->check(pid_selector_check());
  kill->add_flag("--no-tree", o.no_tree, "Only the PIDs given, not their descendants");
  add_valued(*kill, "--session", o.sessions, "Every process of session SID", "SID")
      ->check(pid_check(false, "session ID"));
  add_valued(*kill, "--pgid", o.pgids, "Every process of process group PGID", "PGID")
      ->check(pid_check(false, "process group ID"));
  kill->add_flag("--holders", o.holders, "Every process holding the selected device files");
  add_valued(*kill, "--gpu", o.gpu, "Holders on GPU N (short for --holders --gpus N)", "N")
      ->check(whole_number_check(0, 1023));
  add_valued(*kill, "--user", o.users, "Every process of user USER (name or uid)", "USER");
  add_valued(*kill, "--cgroup", o.cgroups, "Every process in cgroup v2 PATH or below it", "PATH");
  add_valued(*kill, "--job", o.jobs,
             "Every process of Slurm job ID on this node, by its cgroup (for an Epilog)", "ID")
      ->check(job_id_check());
  add_valued(*kill, "--container", o.containers,
             "Every process of the container whose ID starts with ID", "ID")
      ->check(container_id_check());
  kill->add_flag("--leftovers", o.leftovers,
                 "Each dead job whole: orphan, heir, zombie-leader and stuck holders with their "
                 "descendants; not an orphan's job still computing");
  kill->add_flag("--include-busy", o.include_busy,
                 "With --leftovers: take leftovers still computing on the GPU too")
      ->needs("--leftovers");
  kill->add_flag("-y,--yes", o.yes,
                 "Act without asking (needed for selectors other than PIDs, and for a PID whose "
                 "tree reaches other users or sessions)");
  kill->add_flag("--dry-run", o.dry_run, "Print the plan and stop");
  add_valued(*kill, "--signal", o.signal, "First signal: TERM, INT, KILL, 9 ... (default: TERM)",
             "SIG");
  add_valued(*kill, "--grace", o.grace, "Time between the signal and SIGKILL (default: 5s)",
             "DURATION");
  kill->add_flag("--no-kill9", o.no_kill9, "Never escalate to SIGKILL");
  add_valued(*kill, "--wait", o.wait,
             "How long to wait for the exits and the memory (default: 30s)", "DURATION");
  set_kill_help_footer(*kill);
}

void add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* run = app.add_subcommand(
      "run", "Run a workload so that nothing it starts outlives it, and check the GPUs after");
  // No --json: the workload owns stdout (--record FILE is the machine-readable account).
  add_diagnosis_options(*run, o.check, HookScope::kAct, {.json = false, .gpus = true});
  add_valued(*run, "--timeout", o.timeout, "End the run after DURATION, with exit 124", "DURATION");
  add_valued(*run, "--grace", o.grace, "Time between SIGTERM and SIGKILL at teardown (default: 5s)",
             "DURATION");
  add_valued(*run, "--wait", o.wait,
             "How long to wait for exits and GPU memory at teardown (default: 30s)", "DURATION");
  add_valued(*run, "--record", o.record_path, "Write a JSON record of the run to FILE", "FILE");
  add_valued(*run, "--sample-interval", o.sample_interval,
             "GPU memory sampling period for --record (default: 1s)", "DURATION");
  run->add_flag("--require-clean", o.require_clean,
                "Refuse to start, with exit 125, unless `gpuclean check` passes");
  run->add_flag("--no-cgroup", o.no_cgroup,
                "Do not use a cgroup: child subreaper and own session only");
  run->add_flag("-q,--quiet", o.quiet, "Print only problems");
  run->add_flag("--fail-on-leftovers", o.fail_on_leftovers,
                "Exit 1 when the workload left processes behind, even if all were ended");
  add_cgroup_parent_hook(*run, o.cgroup_parent);
  // After "--" every word is the workload's, its own options included.
  add_valued(*run, "command", o.command, "The workload and its arguments, after --",
             "-- CMD [ARGS...]");
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

void add_top_command(CLI::App& app, TopOptions& options) {
  CLI::App* top = app.add_subcommand(
      "top", "Live view: GPU memory over the last minute, holders, problems; explain and kill");
  add_diagnosis_options(*top, options.status, HookScope::kInspect, {.json = false, .gpus = true});
  add_valued(*top, "-d,--delay", options.delay, "Time between refreshes (default: 1s)", "DURATION");
  add_valued(*top, "--full-scan", options.full_scan,
             "Every process's files are re-read at least this often; new processes, "
             "holders and the PIDs NVML lists on every refresh. 0: all on every refresh "
             "(default: 60s)",
             "DURATION");
  add_valued(*top, "--iterations", options.iterations,
             "Quit after this many refreshes (default: run until q)", "N")
      ->check(whole_number_check(0, 1000000000));
  set_help_footer(
      *top,
      {{"gpuclean top", "every GPU, refreshed every second"},
       {"gpuclean top -d 5 --gpus 0,1", "GPUs 0 and 1, every 5 seconds"},
       {"gpuclean top --full-scan 0", "every process's files on every refresh"}},
      {"0  quit (q, Ctrl-C, SIGTERM, SIGHUP, or --iterations reached)",
       "2  usage error, or no terminal (use gpuclean status --json)", "3  /proc unreadable"});
}

void add_recorder_command(CLI::App& app, RecorderOptions& o) {
  CLI::App* recorder = app.add_subcommand(
      "recorder", "The flight recorder: watch the holders and write what changes to a database");
  add_common_options(*recorder, o.common, HookScope::kInspect, {.json = false, .gpus = false});
  add_host_root_hooks(*recorder, o.roots);  // test binary: --kmsg
  add_history_db_option(*recorder, o.db, "The database", "; created 0600 in a 0700 directory");
  add_valued(*recorder, "--interval", o.interval, "Time between looks (default: 1s)", "DURATION");
  add_valued(*recorder, "--retention", o.retention, "Events older than this go (default: 7d)",
             "DURATION");
  add_valued(*recorder, "--max-size", o.max_size,
             "The oldest events go while the database is larger (default: 256MiB)", "SIZE");
  add_valued(*recorder, "--full-scan", o.full_scan,
             "Every process's files are re-read at least this often; new processes and "
             "holders at every look (default: 60s)",
             "DURATION");
  add_valued(*recorder, "--socket", o.socket,
             "Where other commands report their actions (default: "
             "/run/gpuclean/recorder.sock; off: none)",
             "PATH");
  add_valued(*recorder, "--journal", o.journal,
             "journald's socket for the events as structured fields (default: "
             "/run/systemd/journal/socket; off: none)",
             "PATH");
  add_valued(*recorder, "--textfile", o.textfile,
             "Write the recorder's health (gpuclean_recorder_*) here every 10 s, for "
             "node_exporter",
             "PATH");
  recorder->add_flag("--no-proc-events", o.no_proc_events,
                     "Do not read the kernel's process events (then a parent that exits within "
                     "one interval is not named)");
  set_help_footer(
      *recorder,
      {{"gpuclean recorder",
        "record until Ctrl-C (as a service: systemctl enable --now gpuclean-recorder.service)"},
       {"gpuclean recorder --db /tmp/h.db --interval 2s", "by hand, elsewhere"}},
      {"0  stopped by SIGINT, SIGTERM or SIGHUP", "2  usage error", "3  /proc unreadable"});
}

#ifdef GPUCLEAN_METRICS
void add_metrics_command(CLI::App& app, MetricsOptions& options) {
  CLI::App* metrics = app.add_subcommand(
      "metrics", "Prometheus metrics: print once, --textfile PATH, or --listen [ADDR:]PORT");
  // No --json: the output is Prometheus's text format.
  add_diagnosis_options(*metrics, options.status, HookScope::kInspect,
                        {.json = false, .gpus = true});
  CLI::Option* textfile =
      add_valued(*metrics, "--textfile", options.textfile,
                 "Write the metrics to PATH atomically (node_exporter's textfile "
                 "collector reads *.prom files)",
                 "PATH");
  add_valued(*metrics, "--listen", options.listen,
             "Serve /metrics until SIGINT/SIGTERM; ADDR is 127.0.0.1 when left out. A "
             "scrape within 2 s of the last scan is served from it; a client has 2 s to "
             "send its request",
             "[ADDR:]PORT")
      ->excludes(textfile);
  set_help_footer(
      *metrics,
      {{"gpuclean metrics", "one scan, printed"},
       {"gpuclean metrics --listen 9835", "serve 127.0.0.1:9835/metrics"},
       {"gpuclean metrics --textfile /var/lib/node_exporter/gpuclean.prom", "for cron"}},
      {"0  done (a dirty verdict is in the metrics, not the exit code)",
       "2  usage error, or an address that cannot be listened on",
       "3  the first scan failed, or the textfile could not be written"});
}
#endif

namespace {

// One of `words` (the shells, the kinds of --values), or an error naming them.
CLI::Validator one_of(const std::vector<std::string>& words, const std::string& what) {
  return CLI::Validator(
      [words, what](std::string& text) -> std::string {
        if (std::find(words.begin(), words.end(), text) != words.end()) return {};
        return "'" + text + "' is not " + what + " (" + completion::join_words(words, ", ") + ")";
      },
      completion::join_words(words, "|"));
}

}  // namespace

void add_completion_command(CLI::App& app, CompletionOptions& options) {
  CLI::App* completion = app.add_subcommand(
      "completion", "Print a bash, zsh or fish completion script generated from this parser");
  // No --json (the output is a script, or lines for one), no --gpus (--values gpus lists all).
  add_common_options(*completion, options.common, HookScope::kInspect,
                     {.json = false, .gpus = false});
  CLI::Option* shell =
      add_valued(*completion, "shell", options.shell, "The shell: bash, zsh or fish", "SHELL")
          ->check(
              one_of(completion::shell_words(completion::kShells), "a shell gpuclean completes"));
  add_valued(*completion, "--values", options.values,
             "Print what the scripts complete, one VALUE<TAB>DESCRIPTION a line: gpus "
             "(index and name) or pids (the device files' holders, with class and command)",
             "KIND")
      ->check(one_of(completion::shell_words(completion::kValueSets), "a kind of value"))
      ->excludes(shell);
  set_help_footer(
      *completion,
      {{"source <(gpuclean completion bash)", "completion in this bash, without installing"},
       {"gpuclean completion fish > ~/.config/fish/completions/gpuclean.fish",
        "installed for one user"},
       {"gpuclean completion --values pids", "the PIDs the scripts offer for kill and explain"}},
      {"0  printed (no candidates is not an error)",
       "2  usage error, or a --device-glob that matches nothing", "3  /proc cannot be opened"});
}

}  // namespace gpuclean::cli
