// A GoogleTest fixture that starts holder_helper processes holding its own temp files, runs
// gpuclean, and kills exactly what it started when the test ends.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spawn.h"

namespace gpuclean::testing {

class HolderFixture : public ::testing::Test {
 protected:
  // Starts the helper in MODE holding `file`; returns the PIDs it reports.
  std::vector<pid_t> start(const std::string& mode, const std::string& file,
                           const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {HOLDER_HELPER, mode, file, ready_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return start_argv(argv);
  }
  std::vector<pid_t> start_argv(const std::vector<std::string>& argv) {
    std::filesystem::remove(ready_);
    const pid_t launcher = spawn(argv);
    EXPECT_GT(launcher, 0);
    reaper_.adopt(launcher);
    auto pids = wait_for_pids(ready_);
    for (pid_t pid : pids) reaper_.adopt(pid);
    launchers_.push_back(launcher);
    return pids;
  }
  // Reaps a launcher that has exited on its own (heir and daemon modes): then its PID is gone
  // from /proc, like a dead CUDA owner's.
  void reap_launcher(pid_t launcher) {
    reap(launcher);
    launchers_.erase(std::remove(launchers_.begin(), launchers_.end(), launcher), launchers_.end());
  }

  CommandResult gpuclean(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {GPUCLEAN_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv);
  }

  static const nlohmann::json* find_holder(const nlohmann::json& doc, pid_t pid) {
    for (const nlohmann::json& h : doc["holders"]) {
      if (h["pid"] == pid) return &h;
    }
    return nullptr;
  }

  void TearDown() override {
    reaper_.kill_all();
    for (pid_t pid : launchers_) reap(pid);  // they are gone now: no wait
  }

  // Declared first: the members below are initialised from it.
  TempDir dir_;
  ProcessReaper reaper_;
  std::string held_ = dir_.file("device");
  std::string other_ = dir_.file("other-device");
  std::string ready_ = dir_.path() + "/ready";
  std::vector<pid_t> launchers_;
};

}  // namespace gpuclean::testing
