#include "cli/status_command.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "cli/recorder_command.h"
#include "cli/usage_error.h"
#include "collect/gather.h"
#include "core/diagnostics.h"
#include "core/duration.h"
#include "core/units.h"
#include "diagnose/diagnosis.h"
#include "diagnose/gpu_count.h"
#include "diagnose/unseen.h"
#include "diagnose/verdict.h"
#include "output/escape.h"
#include "output/explain_view.h"
#include "output/status_view.h"
#include "output/text_width.h"
#include "output/who_view.h"
#include "procfs/proc_fs.h"
#include "procfs/user_names.h"

namespace gpuclean::cli {

using collect::gather;
using collect::Gathered;
using collect::Gatherer;
using collect::GatherError;

namespace {

struct Prepared {
  StatusReport report;
  int exit_code = kExitClean;
  bool usable = false;
};

// Why the options cannot be used on what was gathered (a usage error, exit 2), or nullopt.
std::optional<std::string> usage_problem(const StatusOptions& options, const Gathered& gathered,
                                         const std::optional<std::set<unsigned>>& gpus) {
  for (const std::string& user : options.allow_users) {
    // A typo in --allow-user would excuse nobody and fail a health check for the wrong reason.
    if (auto uid = procfs::uid_of_user(user); !uid.ok()) {
      return "--allow-user: no user named '" + user + "'";
    }
  }
  if (gpus && !diagnose::gpu_selection_known(gathered.nvml_state, gathered.input.gpu_view)) {
    return std::string(
               "--gpus needs NVML (which GPU a process uses is known only from NVML's process "
               "lists), and NVML is ") +
           to_string(gathered.nvml_state);
  }
  if (options.expect_gpus && gathered.nvml_state == NvmlState::kDisabled) {
    return "--expect-gpus needs NVML (it counts the GPUs), and --no-nvml turns it off";
  }
  if (gpus) {
    const GpuView none;
    const GpuView& view = gathered.input.gpu_view ? *gathered.input.gpu_view : none;
    if (auto unknown = diagnose::unknown_gpu(*gpus, view)) return "--gpus: " + *unknown;
  }
  return std::nullopt;
}

// The report of what `gathered` holds, diagnosed with the options; a missing GPU
// (--expect-gpus) listed first.
// The holders the first diagnosis found idle, with how long the recorder has seen them so
// (issue 37's idle_s): diagnosed again from INPUT, so that their problems say it too.
void add_recorded_idle(const StatusOptions& options, StatusReport& report, diagnose::Input input,
                       const diagnose::Options& diagnose_options) {
  std::vector<const ProcessInfo*> idle;
  for (const Holder& h : report.diagnosis.holders) {
    if (h.visible && h.activity && !h.activity->busy()) idle.push_back(&h.process);
  }
  const auto since = recorded_idle_since(options.history_db, idle, options.common.proc_root);
  if (since.empty()) return;
  for (const auto& [identity, time] : since) {
    input.activity_history.idle_seconds[identity] = std::max(0.0, report.time - time);
  }
  report.diagnosis = diagnose::diagnose(std::move(input), diagnose_options);
}

StatusReport report_of(const StatusOptions& options, Gathered gathered,
                       const std::optional<std::set<unsigned>>& gpus) {
  diagnose::Options diagnose_options;
  diagnose_options.max_unattributed =
      static_cast<Bytes>(options.max_used_mib * static_cast<double>(kMiB));
  diagnose_options.gpus = gpus;
  diagnose_options.allow_users.insert(options.allow_users.begin(), options.allow_users.end());
  diagnose_options.ignore_pids.insert(options.ignore_pids.begin(), options.ignore_pids.end());
  diagnose_options.strict = options.strict;
  const std::size_t visible_gpus =
      gathered.input.gpu_view ? gathered.input.gpu_view->gpus.size() : 0;

  StatusReport report;
  report.host = host_name();
  report.time = unix_now();
  report.nvml_state = gathered.nvml_state;
  report.nvml_message = gathered.nvml_message;
  if (gathered.input.gpu_view) {
    report.driver_version = gathered.input.gpu_view->driver_version;
    report.cuda_driver_version = gathered.input.gpu_view->cuda_driver_version;
  }
  report.files = gathered.files;
  report.stats = gathered.stats;
  const diagnose::Unseen unseen = collect::unseen_in(gathered);
  report.unseen_message = unseen.message;
  report.unseen_decides = unseen.decides;
  // The recorder may know how long an idle holder has been idle: then diagnosed again with it.
  std::optional<diagnose::Input> with_history;
  if (history_readable(options.history_db)) with_history = gathered.input;
  report.diagnosis = diagnose::diagnose(std::move(gathered.input), diagnose_options);
  if (with_history) add_recorded_idle(options, report, std::move(*with_history), diagnose_options);
  if (!options.owners.empty()) diagnose::keep_owners(report.diagnosis, options.owners);
  // An orphan's parent is gone from /proc: the flight recorder may have it.
  std::vector<const ProcessInfo*> orphans;
  for (const Holder& h : report.diagnosis.holders) {
    if (h.klass == HolderClass::kOrphan && h.visible) orphans.push_back(&h.process);
  }
  report.recorded_parents =
      recorded_parents_of(options.history_db, orphans, options.common.proc_root);
  if (options.expect_gpus) {
    if (auto missing = diagnose::missing_gpus(*options.expect_gpus, report.nvml_state, visible_gpus,
                                              report.nvml_message)) {
      // First: a GPU that is not there matters more than what holds the others.
      auto& problems = report.diagnosis.problems;
      problems.insert(problems.begin(), std::move(*missing));
      report.diagnosis.clean = false;
    }
  }
  report.verdict = diagnose::status_verdict(report);
  return report;
}

// A usage problem found once the GPUs were seen, as the parser's are said: "gpuclean: status:
// …" and which help to read; "gpuclean: …" alone for `command` "" (the commands that prepare
// for others: top, snapshot, metrics, run's check).
void print_usage_problem(const Io& io, const std::string& command, const std::string& what) {
  io.err << (command.empty() ? said(what) + "\n" : usage_message(command, what));
}

// The diagnosis of what `gathered` holds, as a report; usage problems are printed, about
// `command`. NVML present but failing (the memory answer would be wrong), or processes not read
// that could hold the device: the verdict is unknown (diagnose::status_verdict), exit 3.
Prepared prepare_from(const StatusOptions& options, Gathered gathered, const Io& io,
                      const std::string& command) {
  Prepared prepared;
  const GpuView none;
  auto gpus = parse_gpu_list(options.common.gpus,
                             gathered.input.gpu_view ? &*gathered.input.gpu_view : &none);
  if (!gpus.ok()) {
    print_usage_problem(io, command, gpus.error().message());
    prepared.exit_code = kExitUsage;
    return prepared;
  }
  if (auto problem = usage_problem(options, gathered, *gpus)) {
    print_usage_problem(io, command, *problem);
    prepared.exit_code = kExitUsage;
    return prepared;
  }
  prepared.report = report_of(options, std::move(gathered), *gpus);
  prepared.usable = true;
  prepared.exit_code = exit_code_for(prepared.report.verdict);
  return prepared;
}

Prepared prepare(const StatusOptions& options, const Io& io, const std::string& command) {
  auto gathered = gather(options.common, {.settle_activity = true});
  if (auto* error = std::get_if<GatherError>(&gathered)) {
    say(io.err) << error->message << '\n';
    Prepared failed;
    failed.exit_code = exit_code_of(*error);
    return failed;
  }
  return prepare_from(options, std::move(std::get<Gathered>(gathered)), io, command);
}

// A machine without the driver is a fact, not a problem: only a failing NVML is worth a line
// from the quiet commands.
void warn_nvml(const StatusReport& report, const Io& io) {
  if (report.nvml_state == NvmlState::kFailed) {
    say(io.err) << "NVML " << to_string(report.nvml_state) << ": "
                << output::escape_terminal(report.nvml_message) << '\n';
  }
}

// check on what `gathered` holds: problems on stdout, exit 0 clean, 1 dirty, 3 unknown.
int check_on(const StatusOptions& options, Gathered gathered, const Io& io,
             const std::string& command) {
  Prepared prepared = prepare_from(options, std::move(gathered), io, command);
  if (!prepared.usable) return prepared.exit_code;
  if (options.common.json) {
    output::render_status_json(io.out, prepared.report);
  } else {
    warn_nvml(prepared.report, io);
    // A check that cannot tell says why (exit 3), beside stdout's problems.
    if (prepared.report.verdict == Verdict::kUnknown && prepared.report.unseen_decides) {
      say(io.err) << prepared.report.unseen_message << '\n';
    }
    output::render_check_lines(io.out, prepared.report);
    // Beside stdout, which scripts read as "nothing: clean" (docs/reference.md).
    output::render_check_warnings(io.err, prepared.report);
  }
  return prepared.exit_code;
}

}  // namespace

StatusPrepared prepare_status(const StatusOptions& options, Gathered gathered, const Io& io) {
  Prepared prepared = prepare_from(options, std::move(gathered), io, "");
  return {std::move(prepared.report), prepared.exit_code, prepared.usable};
}

int run_status(const StatusOptions& options, const Io& io, bool is_terminal) {
  Prepared prepared = prepare(options, io, "status");
  if (!prepared.usable) return prepared.exit_code;
  if (options.common.json) {
    output::render_status_json(io.out, prepared.report);
  } else {
    const bool no_color = std::getenv("NO_COLOR") != nullptr && *std::getenv("NO_COLOR") != '\0';
    output::render_status_text(io.out, prepared.report,
                               {.color = is_terminal && !no_color,
                                .width = terminal_columns(STDOUT_FILENO, output::kNoWidthLimit)});
    // When the verdict line is the unseen processes' sentence (UNKNOWN with NVML answering), it
    // is said there once, not again on stderr (issue 50: non-root saw it twice).
    const bool said_in_verdict = prepared.report.verdict == Verdict::kUnknown &&
                                 prepared.report.nvml_state != NvmlState::kFailed;
    if (auto line = output::unreadable_summary(
            prepared.report.stats, said_in_verdict ? "" : prepared.report.unseen_message);
        !line.empty()) {
      // Beside the screen, so as wide as it: wrapped, never cut (it names the PIDs).
      const auto width =
          static_cast<std::size_t>(terminal_columns(STDERR_FILENO, output::kNoWidthLimit));
      const std::vector<std::string> parts = output::wrap_words(line, width - 2);
      for (std::size_t i = 0; i < parts.size(); ++i) {
        io.err << (i == 0 ? "" : "  ") << parts[i] << '\n';
      }
    }
  }
  return prepared.exit_code;
}

int run_check(const StatusOptions& options, const Io& io) {
  auto gathered = gather(options.common, {.settle_activity = true});
  if (auto* error = std::get_if<GatherError>(&gathered)) {
    say(io.err) << error->message << '\n';
    return exit_code_of(*error);
  }
  return check_on(options, std::move(std::get<Gathered>(gathered)), io, "check");
}

int run_check_on(const StatusOptions& options, Gathered gathered, const Io& io) {
  return check_on(options, std::move(gathered), io, "");
}

namespace {

// "waiting 3.2 s: <the first problem that keeps it waiting> (+2 more)", cut to `width` with
// the last column left empty (some terminals wrap when it is written). Warnings do not keep it
// waiting.
std::string waiting_line(const std::vector<Problem>& problems, const std::string& elapsed,
                         std::size_t width) {
  const auto is_error = [](const Problem& p) { return p.severity == Severity::kError; };
  const auto first = std::find_if(problems.begin(), problems.end(), is_error);
  const auto waiting_on =
      static_cast<std::size_t>(std::count_if(problems.begin(), problems.end(), is_error));
  const std::string more = waiting_on > 1 ? fmt::format(" (+{} more)", waiting_on - 1) : "";
  std::string line = fmt::format("waiting {}: ", elapsed);
  const std::size_t used = output::display_columns(line) + more.size() + 1;
  const std::string message = first != problems.end() ? first->message : "";
  line +=
      output::cut_to_columns(output::escape_terminal(message), width > used ? width - used : 0) +
      more;
  return output::cut_to_columns(line, width - 1);
}

// What wait shows when --timeout passes while dirty.
void report_still_dirty(const WaitOptions& options, const StatusReport& report,
                        const std::string& elapsed, const Io& io) {
  if (options.status.common.json) {
    output::render_status_json(io.out, report);
  } else {
    output::render_check_lines(io.out, report);
    output::render_check_warnings(io.err, report);
  }
  say(io.err, "wait") << "still dirty after " << elapsed << " (--timeout " << options.timeout
                      << ")\n";
}

}  // namespace

namespace {

// Where `wait` stops on what it sees: clean (0), or clean as far as it can see with processes
// it could not read (3: it cannot say clean, and waiting will not let it read them, as check).
// nullopt: not yet.
std::optional<int> wait_ended(const WaitOptions& options, const StatusReport& report,
                              const std::string& elapsed, bool is_terminal, const Io& io) {
  if (!report.diagnosis.clean) return std::nullopt;
  if (report.verdict == Verdict::kUnknown) {
    say(io.err, "wait") << (report.unseen_message.empty()
                                ? std::string("the verdict is unknown: it cannot say clean")
                                : report.unseen_message)
                        << '\n';
    if (options.status.common.json) output::render_status_json(io.out, report);
    return kExitRuntime;
  }
  // Clean with warnings is clean: a stray context does not end before its process does.
  if (is_terminal) say(io.err) << "clean after " << elapsed << '\n';
  // --json: the state it ended on, as status's document (verdict "clean").
  if (options.status.common.json) output::render_status_json(io.out, report);
  return kExitClean;
}

}  // namespace

int run_wait(const WaitOptions& options, const Io& io, bool is_terminal) {
  using Clock = std::chrono::steady_clock;
  // Often enough to notice a release promptly (the driver frees a killed process's memory in
  // ~0.12-0.16 s on an H200), rarely enough to cost nothing: one scan + NVML query per tick.
  constexpr auto kPollInterval = std::chrono::milliseconds(200);
  std::optional<Clock::time_point> deadline;
  const auto started = Clock::now();
  if (options.has_timeout) {
    auto timeout = parse_duration(options.timeout);
    if (!timeout.ok()) {
      say(io.err, "wait") << "--timeout " << timeout.error().message() << '\n';
      return kExitUsage;
    }
    deadline = started + *timeout;
  }
  auto opened = Gatherer::open(options.status.common);
  if (auto* error = std::get_if<GatherError>(&opened)) {
    say(io.err) << error->message << '\n';
    return exit_code_of(*error);
  }
  Gatherer& gatherer = *std::get<std::unique_ptr<Gatherer>>(opened);
  gatherer.start_nvml_helper();
  auto elapsed = [&started] {
    return fmt::format("{:.1f} s", std::chrono::duration<double>(Clock::now() - started).count());
  };
  while (true) {
    Prepared prepared = prepare_from(options.status, gatherer.collect(), io, "wait");
    if (!prepared.usable) return prepared.exit_code;
    if (prepared.report.nvml_state == NvmlState::kFailed) {
      warn_nvml(prepared.report, io);
      return kExitRuntime;
    }
    const auto& problems = prepared.report.diagnosis.problems;
    if (is_terminal) io.err << "\r\x1b[2K";  // clear the progress line
    if (const auto ended = wait_ended(options, prepared.report, elapsed(), is_terminal, io)) {
      return *ended;
    }
    if (deadline && Clock::now() >= *deadline) {
      report_still_dirty(options, prepared.report, elapsed(), io);
      return kExitDirty;
    }
    if (is_terminal) {
      // One line, rewritten in place: cut to the terminal (a line that wraps would scroll
      // the screen five times a second).
      const auto width = static_cast<std::size_t>(terminal_columns(STDERR_FILENO, 80));
      io.err << waiting_line(problems, elapsed(), width) << std::flush;
    }
    auto next = Clock::now() + kPollInterval;
    if (deadline && next > *deadline) next = *deadline;
    std::this_thread::sleep_until(next);
  }
}

output::ExplainSubject read_explain_subject(const StatusReport& report, Pid pid,
                                            const CommonOptions& common) {
  output::ExplainSubject subject;
  subject.pid = pid;
  auto proc = procfs::ProcFs::open(common.proc_root, common.proc_timeout);
  if (proc.ok()) {
    // A thread is explained as its thread group, and named (it may be the one holding files).
    if (auto group = proc->thread_group_of(pid)) {
      subject.thread = pid;
      subject.pid = *group;
    }
  }
  for (const Holder& h : report.diagnosis.holders) {
    if (h.process.pid == subject.pid) subject.holder = h;
  }
  // Not a holder: read it anyway (a plain zombie, a parent, a process holding nothing).
  if (proc.ok()) {
    if (!subject.holder) {
      if (auto p = proc->read_process(subject.pid); p.ok()) subject.process = std::move(p).value();
    }
    const ProcessInfo* info = subject.holder    ? &subject.holder->process
                              : subject.process ? &*subject.process
                                                : nullptr;
    if (info != nullptr && info->ppid > 0) {
      if (auto parent = proc->read_process(info->ppid); parent.ok())
        subject.parent = std::move(parent).value();
    }
  }
  return subject;
}

int run_explain(const ExplainOptions& options, const Io& io) {
  StatusOptions status;
  status.common = options.common;
  Prepared prepared = prepare(status, io, "explain");
  if (!prepared.usable) return prepared.exit_code;

  output::ExplainSubject subject =
      read_explain_subject(prepared.report, options.pid, options.common);
  const ProcessInfo* info = subject.holder    ? &subject.holder->process
                            : subject.process ? &*subject.process
                                              : nullptr;
  if (info != nullptr) {
    subject.recorded_parent = recorded_parent_of(options.db, *info, options.common.proc_root);
  }
  const bool known = subject.holder || subject.process;
  if (options.common.json) {
    output::render_explain_json(io.out, prepared.report, subject);
  } else {
    warn_nvml(prepared.report, io);
    output::render_explain_text(io.out, prepared.report, subject);
  }
  if (!known) return kExitDirty;
  // NVML failing leaves the process's GPU memory unknown: exit 3, as status and check do (the
  // fault matrix found explain exiting 0 with a hung driver).
  return prepared.report.nvml_state == NvmlState::kFailed ? kExitRuntime : kExitClean;
}

}  // namespace gpuclean::cli
