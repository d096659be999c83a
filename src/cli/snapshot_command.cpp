#include "cli/snapshot_command.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>

#include "collect/gather.h"
#include "core/atomic_file.h"
#include "core/diagnostics.h"
#include "core/duration.h"
#include "core/input_file.h"
#include "diagnose/snapshot_diff.h"
#include "diagnose/verdict.h"
#include "input/snapshot_reader.h"
#include "output/diff_view.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/snapshot_json.h"

extern char** environ;  // NOLINT: POSIX; read once, never written

namespace gpuclean::cli {

using collect::gather;
using collect::Gathered;
using collect::GatherError;
namespace {

// Snapshots are a few hundred KiB at most; anything far larger is not one.
constexpr std::size_t kMaxSnapshotBytes = 64u << 20;

std::vector<std::string> environment_entries() {
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    out.emplace_back(*entry);
  }
  return out;
}

// NOLINTNEXTLINE(bugprone-exception-escape): json() is not declared noexcept, yet cannot throw
struct Taken {
  nlohmann::json document;
  int exit_code = kExitClean;  // kExitRuntime when NVML failed (the document says so)
  StatusPrepared prepared;
};

// Looks at the machine once, with the snapshot-only GPU facts, as a snapshot document.
// nullopt after a usage or runtime error (printed; exit code in `failed_exit`).
std::optional<Taken> take_snapshot(const StatusOptions& options, procfs::HostRoots roots,
                                   const Io& io, int& failed_exit) {
  auto gathered = gather(options.common, {.gpu_details = true});
  if (auto* error = std::get_if<GatherError>(&gathered)) {
    say(io.err) << error->message << '\n';
    failed_exit = exit_code_of(*error);
    return std::nullopt;
  }
  Gathered& g = std::get<Gathered>(gathered);
  const std::string nvml_version = g.input.gpu_view ? g.input.gpu_view->nvml_version : "";
  const std::vector<GpuDetails> details = std::move(g.gpu_details);
  Taken taken;
  taken.prepared = prepare_status(options, std::move(g), io);
  if (!taken.prepared.usable) {
    failed_exit = taken.prepared.exit_code;
    return std::nullopt;
  }
  roots.proc = options.common.proc_root;
  const HostFacts facts = procfs::read_host_facts(roots, environment_entries());
  const KernelLog log = procfs::read_kernel_log(roots.kmsg);
  const StatusReport& report = taken.prepared.report;
  taken.document = output::snapshot_document({report, nvml_version, details, facts, log});
  // Unknown, never clean, when NVML failed (issue 13 item 9).
  taken.document["verdict"] = to_string(report.verdict);
  taken.document["problems"] = output::to_json_array(report.diagnosis.problems);
  taken.exit_code = report.nvml_state == NvmlState::kFailed ? kExitRuntime : kExitClean;
  return taken;
}

// Reads and validates a snapshot file; errors name the file and what is wrong.
Result<Snapshot> load_snapshot(const std::string& path) {
  auto read = read_input_file(path, kMaxSnapshotBytes);  // a regular file; never blocks
  if (!read.ok()) return read.error();
  const std::string& text = *read;
  if (text.empty()) return Error{0, path + ": empty (not a snapshot)"};
  auto snapshot = input::parse_snapshot(text);
  if (!snapshot.ok()) return Error{0, path + ": " + snapshot.error().context};
  return snapshot;
}

DiffSide side_of(const std::string& source, const Snapshot& snapshot) {
  return {source, snapshot.host.value_or(""), snapshot.time.value_or("")};
}

diagnose::DiffOptions diff_options(double max_used_mib, std::optional<std::set<unsigned>> gpus) {
  diagnose::DiffOptions options;
  options.memory_tolerance = static_cast<Bytes>(max_used_mib * 1024.0 * 1024.0);
  options.gpus = std::move(gpus);
  return options;
}

// The machine now, read back through the same reader as a file would be.
std::optional<Snapshot> snapshot_now(const StatusOptions& options, const procfs::HostRoots& roots,
                                     const Io& io, int& exit_code,
                                     std::optional<StatusPrepared>* prepared) {
  auto taken = take_snapshot(options, roots, io, exit_code);
  if (!taken) return std::nullopt;
  exit_code = taken->exit_code;
  auto snapshot = input::read_snapshot(taken->document);
  if (!snapshot.ok()) {
    say(io.err) << "internal error: the snapshot of now does not read back: "
                << snapshot.error().context << '\n';
    exit_code = kExitRuntime;
    return std::nullopt;
  }
  if (prepared != nullptr) *prepared = std::move(taken->prepared);
  return std::move(snapshot).value();
}

}  // namespace

int run_snapshot(const SnapshotOptions& options, const Io& io) {
  StatusOptions status;
  status.common = options.common;
  int failed_exit = kExitRuntime;
  auto taken = take_snapshot(status, options.roots, io, failed_exit);
  if (!taken) return failed_exit;
  if (taken->exit_code == kExitRuntime) {
    say(io.err) << "NVML failed: " << output::escape_terminal(taken->prepared.report.nvml_message)
                << " (the snapshot records it)\n";
  }
  if (options.output.empty()) {
    output::write_json(io.out, taken->document);
    return taken->exit_code;
  }
  std::ostringstream text;
  output::write_json(text, taken->document);
  // Atomically (core/atomic_file.h): a reader never sees half a snapshot.
  if (auto written = write_file_atomically(options.output, text.str()); !written.ok()) {
    say(io.err, "snapshot") << "cannot write " << output::escape_terminal(options.output) << " ("
                            << output::escape_terminal(written.error().message()) << ")\n";
    return kExitRuntime;
  }
  return taken->exit_code;
}

int run_diff(const DiffCommandOptions& options, const Io& io) {
  auto gpus = parse_gpu_list(options.common.gpus);
  if (!gpus.ok()) {
    say(io.err, "diff") << gpus.error().message() << '\n';
    return kExitUsage;
  }
  auto before = load_snapshot(options.before);
  if (!before.ok()) {
    say(io.err, "diff") << before.error().message() << '\n';
    return kExitUsage;
  }
  int exit_code = kExitClean;
  std::optional<Snapshot> after;
  DiffReport report;
  if (!options.after.empty()) {
    auto loaded = load_snapshot(options.after);
    if (!loaded.ok()) {
      say(io.err, "diff") << loaded.error().message() << '\n';
      return kExitUsage;
    }
    after = std::move(loaded).value();
    report.after = side_of(options.after, *after);
  } else {
    StatusOptions status;
    status.common = options.common;
    after = snapshot_now(status, options.roots, io, exit_code, nullptr);
    if (!after) return exit_code;
    report.after = side_of("now", *after);
  }
  report.before = side_of(options.before, *before);
  report.differences =
      diagnose::diff_snapshots(*before, *after, diff_options(options.max_used_mib, *gpus));
  if (options.common.json) {
    output::write_json(io.out, output::diff_document(report, host_name(), unix_now()));
  } else {
    output::render_diff_text(io.out, report);
  }
  if (exit_code != kExitClean) return exit_code;
  return result_changing_count(report) > 0 ? kExitDirty : kExitClean;
}

int run_check_against(const StatusOptions& options, const Io& io) {
  auto before = load_snapshot(options.against);
  if (!before.ok()) {
    say(io.err, "check") << "--against " << before.error().message() << '\n';
    return kExitUsage;
  }
  int exit_code = kExitClean;
  std::optional<StatusPrepared> prepared;
  auto now = snapshot_now(options, procfs::HostRoots{}, io, exit_code, &prepared);
  if (!now) return exit_code;
  // Valid: prepare_status accepted it. Its PCI addresses name GPUs of the selection.
  GpuView selected;
  for (const GpuReport& g : prepared->report.diagnosis.gpus) selected.gpus.push_back(g.gpu);
  auto gpus = parse_gpu_list(options.common.gpus, &selected);
  DiffReport report;
  report.before = side_of(options.against, *before);
  report.after = side_of("now", *now);
  report.differences = diagnose::diff_snapshots(
      *before, *now, diff_options(options.max_used_mib, gpus.ok() ? *gpus : std::nullopt));
  const StatusReport& status = prepared->report;
  const Verdict verdict = diagnose::against_verdict(status, report);
  if (options.common.json) {
    nlohmann::json doc = output::diff_document(report, status.host, status.time);
    doc["verdict"] = to_string(verdict);
    doc["problems"] = output::to_json_array(status.diagnosis.problems);
    output::write_json(io.out, doc);
  } else {
    if (status.nvml_state == NvmlState::kFailed) {
      say(io.err) << "NVML failed: " << output::escape_terminal(status.nvml_message) << '\n';
    }
    output::render_check_lines(io.out, status);
    output::render_check_warnings(io.err, status);
    output::render_against_lines(io.out, report);
  }
  return exit_code_for(verdict);  // NVML failing is an unknown verdict: 3, as check says it
}

}  // namespace gpuclean::cli
