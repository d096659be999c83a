#include "cli/top_command.h"

#include <unistd.h>

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "collect/gather.h"
#include "core/diagnostics.h"
#include "core/duration.h"
#include "top/session.h"

namespace gpuclean::cli {

namespace {

std::string duration_arg(Duration d) {
  return std::to_string(d.count()) + "ms";
}

// The global options the kill child needs to see what top sees.
std::vector<std::string> common_args(const CommonOptions& common) {
  std::vector<std::string> args;
  for (const std::string& glob : common.device_globs) args.push_back("--device-glob=" + glob);
  if (common.no_nvml) args.emplace_back("--no-nvml");
  if (common.threads > 0) {
    args.emplace_back("--threads");
    args.push_back(std::to_string(common.threads));
  }
  args.emplace_back("--nvml-timeout");
  args.push_back(duration_arg(common.nvml_timeout));
  args.emplace_back("--proc-timeout");
  args.push_back(common.proc_timeout ? duration_arg(*common.proc_timeout) : "0");
  return args;
}

// What the session asks of status, explain and kill, with the command's own options.
top::SessionHooks session_hooks(const StatusOptions& status) {
  top::SessionHooks hooks;
  hooks.diagnose = [status](const collect::Gathered& gathered, const std::string& gpus) {
    StatusOptions options = status;
    options.common.gpus = gpus;
    std::ostringstream out;
    std::ostringstream err;
    StatusPrepared prepared = prepare_status(options, gathered, Io{out, err});
    top::Diagnosed diagnosed;
    if (prepared.usable) {
      diagnosed.report = std::move(prepared.report);
    } else {
      diagnosed.error = err.str();
      if (!diagnosed.error.empty() && diagnosed.error.back() == '\n') diagnosed.error.pop_back();
    }
    return diagnosed;
  };
  hooks.gpu_list_error = [](const std::string& gpus) -> std::optional<std::string> {
    auto parsed = parse_gpu_list(gpus);
    if (parsed.ok()) return std::nullopt;
    return parsed.error().message();
  };
  hooks.explain_subject = [common = status.common](const StatusReport& report, Pid pid) {
    return read_explain_subject(report, pid, common);
  };
  hooks.kill_args = common_args(status.common);
  return hooks;
}

}  // namespace

int run_top(const TopOptions& options, const Io& io) {
  if (::isatty(STDIN_FILENO) == 0 || ::isatty(STDOUT_FILENO) == 0) {
    say(io.err) << "top needs a terminal (it is a live, full-screen view); for a script or a "
                   "log use gpuclean status, gpuclean status --json, or gpuclean wait\n";
    return kExitUsage;
  }
  auto delay = parse_duration(options.delay);
  if (!delay.ok() || delay->count() < 100) {
    say(io.err, "top") << "--delay "
                       << (delay.ok() ? "must be at least 100ms" : delay.error().message()) << '\n';
    return kExitUsage;
  }
  auto full_scan = parse_duration(options.full_scan);
  if (!full_scan.ok()) {
    say(io.err, "top") << "--full-scan " << full_scan.error().message() << '\n';
    return kExitUsage;
  }
  std::unique_ptr<collect::Gatherer> gatherer;
  if (auto failed = open_gatherer(options.status.common, io, gatherer)) return *failed;
  gatherer->scan_in_turns(*full_scan);
  gatherer->start_nvml_helper();  // before any thread: it forks
  // The first look before the screen opens: a bad --gpus or --allow-user is said plainly.
  collect::Gathered first = gatherer->collect();
  {
    std::ostringstream out;
    if (StatusPrepared prepared = prepare_status(options.status, first, Io{out, io.err});
        !prepared.usable) {
      return prepared.exit_code;
    }
  }
  top::SessionSettings settings{
      .delay = *delay, .iterations = options.iterations, .gpus = options.status.common.gpus};
  return top::run_session(settings, std::move(gatherer), session_hooks(options.status),
                          std::move(first));
}

}  // namespace gpuclean::cli
