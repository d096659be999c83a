// The options, arguments and help of the commands that look: the common and diagnosis options,
// global options given before a command, status, check, explain, wait, who, snapshot, diff and
// plot (cli/command_line.h).
#include "cli/command_line.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/help.h"
#include "cli/usage_checks.h"
#include "core/duration.h"
#include "core/leftover_cost.h"
#include "recorder/recorder.h"

namespace gpuclean::cli {

void add_history_db_option(CLI::App& command, std::string& db, const std::string& purpose,
                           const std::string& note) {
  add_valued(command, "--db", db,
             purpose + " (default: " + std::string(recorder::kDefaultDatabase) + note + ")",
             "PATH");
}

void add_common_options(CLI::App& command, CommonOptions& options, HookScope scope,
                        OfferedGlobals offered) {
  const std::size_t before = command.get_options().size();
  if (offered.json) {
    command.add_flag("--json", options.json, "One JSON document on stdout, nothing else");
  }
  if (offered.gpus) {
    add_valued(command, "--gpus", options.gpus,
               "GPUs to look at: 0,2 or 0-3, or a PCI address (default: all)", "LIST");
  }
  add_valued(command, "--device-glob", options.device_globs,
             "Device files to scan, repeatable; quote the glob (default: the NVIDIA "
             "device files: /dev/nvidia[0-9]*, nvidiactl, nvidia-uvm*, nvidia-caps/*; and "
             "the DRM nodes of AMD and Intel GPUs, with /dev/kfd)",
             "GLOB")
      ->allow_extra_args(false);
  command.add_flag("--no-nvml", options.no_nvml, "Use only /proc, never NVML");
  command.add_flag("--no-drm", options.no_drm,
                   "Never look at AMD or Intel GPUs (the kernel's DRM devices in sysfs and their "
                   "clients' fdinfo)");
  add_valued(command, "--threads", options.threads,
             "Threads for the /proc scan (default: one per core, at most 16)", "N")
      ->check(whole_number_check(1, 256));
  command
      .add_option_function<std::string>(
          "--nvml-timeout",
          [&options](const std::string& text) {
            auto timeout = parse_duration(text);
            if (!timeout.ok())
              throw CLI::ValidationError("--nvml-timeout", timeout.error().message());
            if (timeout->count() <= 0) throw CLI::ValidationError("--nvml-timeout", "must be > 0");
            options.nvml_timeout = *timeout;
          },
          "How long one NVML answer may take before NVML counts as failed (default: 5s)")
      ->option_text("DURATION");
  command
      .add_option_function<std::string>(
          "--proc-timeout",
          [&options](const std::string& text) {
            auto timeout = parse_duration(text);
            if (!timeout.ok())
              throw CLI::ValidationError("--proc-timeout", timeout.error().message());
            if (timeout->count() < 0) throw CLI::ValidationError("--proc-timeout", "must be >= 0");
            options.proc_timeout =
                timeout->count() == 0 ? std::nullopt : std::optional<Duration>(*timeout);
          },
          "How long reading a process's command line or maps may take before its memory map "
          "counts as locked, stuck; 0 for no limit (default: 1s)")
      ->option_text("DURATION");
  // Under their own heading in a command's help, after the command's own (cli/help.h).
  const std::vector<CLI::Option*> all = command.get_options();
  for (std::size_t i = before; i < all.size(); ++i) all[i]->group(kGlobalOptionsGroup);
  add_test_hooks(command, options, scope);
}

namespace {

bool given_in(const CLI::App& app, const std::string& name) {
  const CLI::Option* option = app.get_option_no_throw(name);
  return option != nullptr && option->count() > 0;
}

}  // namespace

Status apply_global_options(const CLI::App& top, const CommonOptions& given, const CLI::App& sub,
                            CommonOptions* into) {
  const std::string& command = sub.get_name();
  struct Global {
    const char* name;
    std::function<bool()> merge;  // given in both places: merged, or false when they disagree
    std::function<void()> copy;   // given only before the subcommand
  };
  const auto& g = given;
  std::vector<Global> globals = {
      {"--json", [] { return true; }, [&] { into->json = true; }},
      {"--no-nvml", [] { return true; }, [&] { into->no_nvml = true; }},
      {"--no-drm", [] { return true; }, [&] { into->no_drm = true; }},
      {"--device-glob",
       [&] {
         into->device_globs.insert(into->device_globs.begin(), g.device_globs.begin(),
                                   g.device_globs.end());
         return true;
       },
       [&] { into->device_globs = g.device_globs; }},
      {"--gpus", [&] { return into->gpus == g.gpus; }, [&] { into->gpus = g.gpus; }},
      {"--threads", [&] { return into->threads == g.threads; }, [&] { into->threads = g.threads; }},
      {"--nvml-timeout", [&] { return into->nvml_timeout == g.nvml_timeout; },
       [&] { into->nvml_timeout = g.nvml_timeout; }},
      {"--proc-timeout", [&] { return into->proc_timeout == g.proc_timeout; },
       [&] { into->proc_timeout = g.proc_timeout; }},
      {"--proc-root", [&] { return into->proc_root == g.proc_root; },
       [&] { into->proc_root = g.proc_root; }},
      {"--test-gpu-source", [&] { return into->test_gpu_source == g.test_gpu_source; },
       [&] { into->test_gpu_source = g.test_gpu_source; }},
  };
  for (const Global& option : globals) {
    if (!given_in(top, option.name)) continue;
    if (into == nullptr || sub.get_option_no_throw(option.name) == nullptr) {
      return Error{
          0, std::string(option.name) + " is not an option of " + command + " (given before it)"};
    }
    if (!given_in(sub, option.name)) {
      option.copy();
    } else if (!option.merge()) {
      return Error{0, std::string(option.name) + " given before and after " + command +
                          " with different values"};
    }
  }
  return Ok{};
}

void add_diagnosis_options(CLI::App& command, StatusOptions& options, HookScope scope,
                           OfferedGlobals offered) {
  add_common_options(command, options.common, scope, offered);
  add_valued(command, "--max-used", options.max_used_mib,
             "Used MiB per GPU that no process accounts for and that still counts as "
             "clean (default: 1024)",
             "MIB")
      ->check(mib_check());
  add_valued(command, "--allow-user", options.allow_users,
             "Holders of this user are fine (repeatable)", "USER");
  add_valued(command, "--ignore-pid", options.ignore_pids, "This holder is fine (repeatable)",
             "PID")
      ->check(pid_check(false));
  command.add_flag("--strict", options.strict,
                   "Warnings (a stray CUDA context) are problems too: the GPUs are dirty");
}

namespace {

void add_expect_gpus_option(CLI::App& command, StatusOptions& options) {
  add_valued(command, "--expect-gpus", options.expect_gpus,
             "A problem when NVML sees fewer GPUs than N, or no driver is loaded (Slurm "
             "health checks, readiness probes)",
             "N")
      ->check(whole_number_check(1, 1024));
}

// --job / --container: status, check and wait about one job's or container's holders.
void add_owner_filter_options(CLI::App& command, StatusOptions& options) {
  add_valued(command, "--job", options.owners.jobs,
             "Only the holders of Slurm job ID and their problems (repeatable)", "ID")
      ->check(job_id_check());
  add_valued(command, "--container", options.owners.containers,
             "Only the holders of the container whose ID starts with ID (repeatable)", "ID")
      ->check(container_id_check());
}

std::vector<std::string> status_exit_codes() {
  return {"0  clean", "1  dirty: a problem is listed with its fix", "2  usage error",
          "3  NVML failing or not answering (verdict UNKNOWN), or /proc unreadable"};
}

}  // namespace

void add_status_command(CLI::App& app, StatusOptions& options) {
  CLI::App* status = app.add_subcommand(
      "status", "Per GPU: memory, who holds it and why, problems with fixes (the default)");
  add_diagnosis_options(*status, options, HookScope::kInspect);
  add_expect_gpus_option(*status, options);
  add_owner_filter_options(*status, options);
  add_history_db_option(*status, options.history_db,
                        "The flight recorder's database, for orphans' parents and how long idle "
                        "holders have been idle",
                        ", when readable");
  set_help_footer(*status,
                  {{"gpuclean", "the same as gpuclean status"},
                   {"gpuclean status --gpus 0,1", "only GPUs 0 and 1"},
                   {"gpuclean status --json | jq .verdict", "the verdict for a script"}},
                  status_exit_codes());
}

void add_check_command(CLI::App& app, StatusOptions& options) {
  CLI::App* check = app.add_subcommand(
      "check", "Pre-flight: silent and exit 0 when clean; one line per problem and exit 1");
  add_diagnosis_options(*check, options, HookScope::kInspect);
  add_expect_gpus_option(*check, options);
  add_owner_filter_options(*check, options);
  add_valued(*check, "--against", options.against,
             "Also fail on differences from this snapshot that can change a benchmark "
             "result (gpuclean snapshot -o FILE)",
             "FILE");
  set_help_footer(
      *check,
      {{"gpuclean check && python train.py", "train only on clean GPUs"},
       {"gpuclean check --expect-gpus 8", "also a problem when a GPU has fallen off the bus"},
       {"gpuclean check --against before.json", "and nothing result-changing differs"}},
      {"0  clean", "1  dirty (one line per problem), or --against found a difference",
       "2  usage error, or an unreadable --against file",
       "3  NVML failing or not answering, or /proc unreadable"});
}

void add_explain_command(CLI::App& app, ExplainOptions& options) {
  CLI::App* explain =
      app.add_subcommand("explain", "Everything known about one PID and why it holds GPU memory");
  add_common_options(*explain, options.common, HookScope::kInspect);
  add_valued(*explain, "pid", options.pid,
             "The process (it may be one NVML names that is gone: its heirs are shown)", "PID")
      ->required()
      ->check(pid_check(false));
  add_history_db_option(*explain, options.db,
                        "The flight recorder's database, for a parent that is gone",
                        ", when readable");
  set_help_footer(
      *explain,
      {{"gpuclean explain 72309", "why pid 72309 holds memory, and the fix"},
       {"gpuclean explain --json 72309", "the same as one JSON document"}},
      {"0  the process was found (whether or not it is a problem)",
       "1  neither /proc nor NVML has that PID (a dead owner's account is still printed)",
       "2  usage error", "3  NVML failed"});
}

void add_wait_command(CLI::App& app, WaitOptions& options) {
  CLI::App* wait = app.add_subcommand("wait", "Block until the selected GPUs are clean");
  add_diagnosis_options(*wait, options.status, HookScope::kInspect);
  add_owner_filter_options(*wait, options.status);
  add_valued(*wait, "--timeout", options.timeout,
             "Give up after this long, with exit 1 (default: wait for ever)", "DURATION")
      ->each([&options](const std::string&) { options.has_timeout = true; });
  set_help_footer(
      *wait,
      {{"gpuclean kill --leftovers -y && gpuclean wait --timeout 1m", "tear down, then wait"},
       {"gpuclean wait --gpus 0 --timeout 30s", "GPU 0 only; exit 1 after 30 s"}},
      {"0  clean", "1  timed out: the remaining problems are printed", "2  usage error",
       "3  NVML failed, or processes it could not read (it cannot say clean)"});
}

void add_who_command(CLI::App& app, WhoOptions& options) {
  CLI::App* who = app.add_subcommand(
      "who", "Every process holding the device files, including zombie-led thread groups");
  // No --gpus: which GPU a process uses is NVML's to tell, not the device files' (every CUDA
  // process holds every GPU's file); `gpuclean status --gpus` answers that.
  add_common_options(*who, options.common, HookScope::kInspect, {.json = true, .gpus = false});
  add_valued(*who, "paths", options.paths, "Files to look at instead of the NVIDIA device files",
             "PATH...");
  add_valued(*who, "--pid", options.pids,
             "Only these processes (repeatable, or comma-separated); PID@START: only while "
             "PID is still the process that started at START (clock ticks, start_ticks in "
             "--json)",
             "PID[@START]")
      ->allow_extra_args(false)  // `--pid 4242 /dev/nvidia0`: the path stays a path
      ->delimiter(',')
      ->check(pid_selector_check());
  set_help_footer(
      *who,
      {{"gpuclean who", "every holder of /dev/nvidia*, zombie-led ones included"},
       {"gpuclean who /dev/nvidia3 --json", "one file, as JSON"},
       {"gpuclean who --pid 4242 --pid 4250@812345", "only these processes"}},
      {"0  nobody holds the files", "1  somebody holds them",
       "2  usage error, or a path or glob that matches nothing",
       "3  /proc cannot be opened, or nobody is seen holding them but processes that could hold "
       "them could not be read (as non-root: other users'; or past the read deadline)"});
}

void add_snapshot_command(CLI::App& app, SnapshotOptions& options) {
  CLI::App* snapshot = app.add_subcommand(
      "snapshot", "JSON fingerprint of what a GPU benchmark depends on (compare with diff)");
  add_common_options(*snapshot, options.common, HookScope::kInspect);
  add_valued(*snapshot, "-o,--output", options.output, "Write to FILE instead of stdout", "FILE");
  add_host_root_hooks(*snapshot, options.roots);
  set_help_footer(*snapshot,
                  {{"gpuclean snapshot -o before.json", "before a benchmark"},
                   {"gpuclean diff before.json", "afterwards: what changed since"}},
                  {"0  written", "2  usage error",
                   "3  NVML failed (the snapshot is still written and says so), or FILE could "
                   "not be written"});
}

void add_diff_command(CLI::App& app, DiffCommandOptions& options) {
  CLI::App* diff = app.add_subcommand(
      "diff", "What changed between two snapshots (AFTER defaults to now), most relevant first");
  add_common_options(*diff, options.common, HookScope::kInspect);
  add_valued(*diff, "before", options.before, "The earlier snapshot (gpuclean snapshot -o FILE)",
             "BEFORE")
      ->required();
  add_valued(*diff, "after", options.after, "The later snapshot (default: the machine now)",
             "AFTER");
  add_valued(*diff, "--max-used", options.max_used_mib,
             "Used-memory growth per GPU, in MiB, not worth a line (default: 1024)", "MIB")
      ->check(mib_check());
  add_host_root_hooks(*diff, options.roots);
  set_help_footer(*diff,
                  {{"gpuclean diff before.json", "the machine now against before.json"},
                   {"gpuclean diff a.json b.json --json", "two snapshots, as JSON"}},
                  {"0  no result-changing difference", "1  some result-changing difference",
                   "2  usage error, or a snapshot unreadable, malformed or of a newer schema",
                   "3  NVML failed for \"now\""});
}

namespace {

// --by of history --report and plot --report: the report's grouping (CostGrouping's names).
CLI::Option* add_report_by_option(CLI::App& command, std::string& by) {
  return add_valued(command, "--by", by,
                    "With --report: one line per user, owner (Slurm job, container, ...), "
                    "command or gpu (default: user)",
                    "user|owner|command|gpu")
      ->check(CLI::IsMember(
          std::vector<std::string>(kCostGroupingNames.begin(), kCostGroupingNames.end())));
}

}  // namespace

void add_plot_command(CLI::App& app, PlotOptions& o) {
  CLI::App* plot =
      app.add_subcommand("plot", "Draw a run record (gpuclean run --record), or --history, as SVG");
  add_valued(*plot, "record", o.record_path, "The record file (gpuclean run --record FILE)",
             "RECORD");
  plot->add_flag("--history", o.history,
                 "Draw the flight recorder's history instead: memory per GPU, its actions and "
                 "Xids marked");
  CLI::Option* report = plot->add_flag(
      "--report", o.report,
      "Draw what leftovers cost instead (history --report): GiB-hours by --by, and when each "
      "of the worst was a leftover and how it ended");
  report->excludes("--history");
  add_report_by_option(*plot, o.by)->needs(report);
  add_history_db_option(*plot, o.db, "With --history or --report: the recorder's database");
  add_valued(*plot, "--since", o.since,
             "With --history or --report: from this moment (default: 2h; 7d with --report)",
             "TIME");
  add_valued(*plot, "--until", o.until, "With --history or --report: to this moment (default: now)",
             "TIME");
  add_valued(*plot, "-o,--output", o.output_path,
             "Write the SVG to FILE (default: stdout, when it is not a terminal)", "FILE");
  set_help_footer(*plot,
                  {{"gpuclean run --record run.json -- python train.py", "record a run"},
                   {"gpuclean plot run.json -o run.svg", "then draw it"},
                   {"gpuclean plot --history --since 2h -o gpu.svg", "the last two hours"},
                   {"gpuclean plot --report --by owner -o cost.svg", "a week's leftovers"}},
                  {"0  drawn", "2  usage error, or an unreadable or malformed record",
                   "3  the SVG could not be written, or the history not read"});
}

void add_history_command(CLI::App& app, HistoryOptions& o) {
  CLI::App* history = app.add_subcommand(
      "history", "What held the GPUs in the past: the flight recorder's timeline, or --at TIME");
  history->add_flag("--json", o.common.json, "Print JSON (docs/reference.md, \"history\")");
  add_history_db_option(*history, o.db, "The recorder's database");
  add_valued(*history, "--since", o.since,
             "Events from this moment: a duration ago (2h, 7d), a local time "
             "(2026-12-04 10:07, 10:07) or @UNIX-SECONDS (default: 24h; 10m with --follow)",
             "TIME");
  add_valued(*history, "--until", o.until, "Events before this moment (default: now)", "TIME");
  add_valued(*history, "--kind", o.kinds,
             "Only events of these kinds, comma-separated (appeared, left, class_changed, "
             "memory_changed, action, xid, ...: docs/reference.md)",
             "KIND[,KIND...]")
      ->delimiter(',');
  history->add_flag("--all", o.all,
                    "Every memory change on its own line (by default a holder's changes after "
                    "its first fold into one line: how many, the peak, the last)");
  history->add_flag("-f,--follow", o.follow,
                    "Keep printing events as the recorder writes them, until interrupted "
                    "(with --json: a JSON object per line)");
  add_valued(*history, "--at", o.at,
             "Instead of a timeline: which processes held a device at that moment, with "
             "their memory per GPU and parent",
             "TIME");
  add_valued(*history, "--gpu", o.gpu, "Only events about this GPU (and holders' own events)", "N");
  add_valued(*history, "--pid", o.pid, "Only this PID's events (every process that had it)", "PID");
  add_valued(*history, "--job", o.job, "Only the events of processes of this Slurm job", "ID");
  add_valued(*history, "--limit", o.limit, "At most this many events (default: 100000)", "N")
      ->check(whole_number_check(1, 100000000));
  CLI::Option* report = history->add_flag(
      "--report", o.report,
      "Instead of a timeline: what leftovers cost, in GiB-hours of GPU memory, by --by, with "
      "the longest-lived leftovers and how each ended (default --since: 7d)");
  add_report_by_option(*history, o.by)->needs(report);
  for (const char* other :
       {"--at", "--follow", "--kind", "--all", "--gpu", "--pid", "--job", "--limit"}) {
    report->excludes(other);
  }
  set_help_footer(
      *history,
      {{"gpuclean history --since 2h", "the last two hours"},
       {"gpuclean history --report --since 7d --by owner", "GiB-hours lost to leftovers, by job"},
       {"gpuclean history --at 03:12 --gpu 3", "what held GPU 3 at 03:12 today"},
       {"gpuclean history -f --kind appeared,left,action", "holders and actions as they come"}},
      {"0  shown (also when nothing matched)", "2  usage error",
       "3  the database cannot be read (none yet, not root's to read, damaged)"});
}

void add_reset_command(CLI::App& app, ResetCommandOptions& o) {
  CLI::App* reset = app.add_subcommand(
      "reset", "What stands between each GPU and a reset (nvidia-smi --gpu-reset), in order");
  add_common_options(*reset, o.common, HookScope::kInspect);
  add_host_root_hooks(*reset, o.roots);
  reset->add_flag("--plan", o.plan,
                  "The plan: every blocker with how it gets out of the way (the "
                  "default, and for now the only mode: nothing is changed)");
  reset->add_flag("--force", o.force,
                  "Plan to end jobs at work too instead of refusing the reset for them");
  set_help_footer(*reset,
                  {{"gpuclean reset --gpus 3", "what blocks GPU 3's reset, and how to clear it"},
                   {"gpuclean reset --gpus 0,1 --json", "the same as JSON"}},
                  {"0  nothing refuses the reset",
                   "1  something refuses it (a job at work, MIG, vfio, not root, ...)",
                   "2  usage error", "3  NVML does not answer, or /proc unreadable"});
}

}  // namespace gpuclean::cli
