#include "cli/common.h"

#include "cli/test_hooks.h"
#include "cli/usage_error.h"
#include "core/duration.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

namespace gpuclean::cli {

void add_common_options(CLI::App& command, CommonOptions& options, HookScope scope,
                        OfferedGlobals offered) {
  if (offered.json) {
    command.add_flag("--json", options.json, "One JSON document on stdout, nothing else");
  }
  if (offered.gpus) {
    command.add_option("--gpus", options.gpus, "GPUs to look at: 0,2 or 0-3 (default: all)")
        ->option_text("LIST");
  }
  command
      .add_option("--device-glob", options.device_globs,
                  "Device files to scan, repeatable; quote the glob (default: the NVIDIA "
                  "device files: /dev/nvidia[0-9]*, nvidiactl, nvidia-uvm*, nvidia-caps/*)")
      ->option_text("GLOB")
      ->allow_extra_args(false);
  command.add_flag("--no-nvml", options.no_nvml, "Use only /proc, never NVML");
  command
      .add_option("--threads", options.threads,
                  "Threads for the /proc scan (default: one per core, at most 16)")
      ->option_text("N")
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

int exit_code_of(const collect::GatherError& error) {
  return error.usage ? kExitUsage : kExitRuntime;
}

Result<std::optional<std::set<unsigned>>> parse_gpu_list(const std::string& text) {
  if (text == "all") return std::optional<std::set<unsigned>>();
  std::set<unsigned> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    auto number = [](std::string_view s) -> std::optional<unsigned> {
      unsigned v = 0;
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size() || v > 1023)
        return std::nullopt;
      return v;
    };
    const std::size_t dash = part.find('-');
    if (dash == std::string::npos) {
      auto v = number(part);
      if (!v) return Error{0, "--gpus: '" + part + "' is not a GPU index (use 0,2 or 0-3 or all)"};
      out.insert(*v);
    } else {
      auto lo = number(std::string_view(part).substr(0, dash));
      auto hi = number(std::string_view(part).substr(dash + 1));
      if (!lo || !hi || *lo > *hi) {
        return Error{0, "--gpus: '" + part + "' is not a range (use 0-3)"};
      }
      for (unsigned i = *lo; i <= *hi; ++i) out.insert(i);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return std::optional<std::set<unsigned>>(std::move(out));
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

int terminal_columns(int fd, int fallback) {
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr && *columns != '\0') {
    int value = 0;
    const char* end = columns + std::char_traits<char>::length(columns);
    const auto [ptr, ec] = std::from_chars(columns, end, value);
    if (ec == std::errc{} && ptr == end && value > 0) return std::max(value, 20);
  }
  winsize size{};
  if (::isatty(fd) == 1 && ::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    return size.ws_col;
  }
  return fallback;
}

}  // namespace gpuclean::cli
