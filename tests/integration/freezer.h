// The cgroup v1 freezer, for tests of processes nothing can kill: a process in a group set to
// FROZEN is in state D with wait channel `refrigerator`, and a SIGKILL stays pending until the
// group is thawed (docs/facts.md). Only on machines where the v1 freezer is mounted (the CPU
// machines: hybrid cgroups) and as root.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "spawn.h"

namespace gpuclean::testing {

inline constexpr const char* kFreezerRoot = "/sys/fs/cgroup/freezer";

inline bool write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// Whether a cgroup v1 hierarchy with the freezer controller is mounted at kFreezerRoot.
inline bool freezer_mounted() {
  std::istringstream in(slurp("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string field;
    std::string mount_point;
    for (int i = 0; i < 5 && fields >> field; ++i) {
      if (i == 4) mount_point = field;
    }
    if (mount_point != kFreezerRoot) continue;
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    std::string source;
    std::string options;
    tail >> fstype >> source >> options;
    if (fstype == "cgroup" && ("," + options + ",").find(",freezer,") != std::string::npos) {
      return true;
    }
  }
  return false;
}

// A freezer group of the test's own; thawed, emptied and removed at destruction, so nothing
// is left with a SIGKILL pending forever.
class FreezerGroup {
 public:
  explicit FreezerGroup(const std::string& name) : path_(std::string(kFreezerRoot) + "/" + name) {
    std::error_code ec;
    created_ = std::filesystem::create_directory(path_, ec);
  }
  ~FreezerGroup() {
    if (!created_) return;
    thaw();
    std::istringstream procs(slurp(path_ + "/cgroup.procs"));
    std::string pid;
    while (procs >> pid) write_text(std::string(kFreezerRoot) + "/cgroup.procs", pid);
    std::error_code ec;
    wait_until(
        [&] { return std::filesystem::remove(path_, ec) || !std::filesystem::exists(path_); },
        std::chrono::seconds(5));
  }
  FreezerGroup(const FreezerGroup&) = delete;
  FreezerGroup& operator=(const FreezerGroup&) = delete;

  [[nodiscard]] bool created() const { return created_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  bool thaw() {
    write_text(path_ + "/freezer.state", "THAWED");
    return wait_until(
        [&] { return slurp(path_ + "/freezer.state").find("THAWED") != std::string::npos; },
        std::chrono::seconds(5));
  }

 private:
  std::string path_;
  bool created_ = false;
};

}  // namespace gpuclean::testing
