// The shipping gpuclean against a fake libnvidia-ml.so.1 (tests/fake_nvml/fake_nvml.c), loaded
// through LD_LIBRARY_PATH: the fixture shared by fake_nvml_test.cpp and
// nvml_fault_matrix_test.cpp. Processes named in the fake's lists are holder_helpers the test
// started, holding its own temp file (--device-glob).
#pragma once

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "holder_fixture.h"

namespace gpuclean::testing {

class FakeNvmlTest : public HolderFixture {
 protected:
  // A scenario file for the fake (format: the comment at the top of fake_nvml.c).
  std::string scenario(const std::string& text) {
    std::string path = dir_.path() + "/nvml-" + std::to_string(scenarios_++) + ".conf";
    std::ofstream(path) << text;
    return path;
  }
  // The environment that makes gpuclean load the fake in LIBRARY_DIR with SCENARIO_PATH.
  static std::vector<std::string> fake_env(const std::string& library_dir,
                                           const std::string& scenario_path) {
    return {"LD_LIBRARY_PATH=" + library_dir, "FAKE_NVML_CONFIG=" + scenario_path};
  }
  static std::string variant_dir(const std::string& variant) {
    return std::string(FAKE_NVML_DIR) + "/" + variant;
  }
  // The shipping binary with the fake VARIANT (r580, r535, r470) and SCENARIO; the device
  // files are the test's own. TIMEOUT: run_command SIGKILLs it then (a hang fails the test
  // instead of hanging the suite).
  CommandResult run(const std::string& variant, const std::string& scenario_path,
                    std::vector<std::string> args,
                    std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    return run_in(variant_dir(variant), scenario_path, std::move(args), timeout);
  }
  CommandResult run_in(const std::string& library_dir, const std::string& scenario_path,
                       std::vector<std::string> args,
                       std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    std::vector<std::string> argv = {GPUCLEAN_SHIPPING_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--device-glob", held_});
    return run_command(argv, fake_env(library_dir, scenario_path), timeout);
  }
  static nlohmann::json parse(const CommandResult& result) {
    try {
      return nlohmann::json::parse(result.out);
    } catch (const nlohmann::json::exception&) {
      ADD_FAILURE() << "not JSON: " << result.out << result.err;
      return nlohmann::json::object();
    }
  }
  static std::string pid_line(pid_t pid, unsigned long long bytes, const char* kind = "compute") {
    return "process 0 " + std::string(kind) + " " + std::to_string(pid) + " " +
           std::to_string(bytes) + "\n";
  }
  int scenarios_ = 0;
};

// A live (not zombie) process with `marker` in its command line, other than those in `except`,
// or 0 when there is none. gpuclean's NVML helper is a fork of gpuclean: same command line.
inline pid_t process_with_arg(const std::string& marker, const std::vector<pid_t>& except = {}) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    if (std::find(except.begin(), except.end(), pid) != except.end()) continue;
    const std::string cmdline = slurp(it->path().string() + "/cmdline");
    const std::string stat = slurp(it->path().string() + "/stat");
    const auto close = stat.rfind(')');
    const bool zombie =
        close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
    if (!zombie && cmdline.find(marker) != std::string::npos) return pid;
  }
  return 0;
}

}  // namespace gpuclean::testing
