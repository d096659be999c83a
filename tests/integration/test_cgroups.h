// Cgroups a test makes for itself: a group of its own ("NAME-PID") in the cgroup v2 hierarchy,
// groups below it with the path shapes the test needs, removed deepest first once the test's
// processes are gone. The machine's real groups are never touched.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "spawn.h"

namespace gpuclean::testing {

// Where the cgroup v2 hierarchy is mounted (never hard-coded: /sys/fs/cgroup/unified on the
// hybrid CPU machines, /sys/fs/cgroup on the GPU machine), or "".
inline std::string cgroup2_mount() {
  std::istringstream in(slurp("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" - cgroup2 ") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string field;
    for (int i = 0; i < 5 && fields >> field; ++i) {
    }
    return field;
  }
  return "";
}

class TestCgroups {
 public:
  // Makes MOUNT/NAME-PID in the v2 hierarchy; why_not() says why it could not (then skip).
  explicit TestCgroups(const std::string& name) {
    const std::string mount = cgroup2_mount();
    if (mount.empty()) {
      why_not_ = "no cgroup v2 hierarchy mounted";
      return;
    }
    root_ = mount + "/" + name + "-" + std::to_string(::getpid());
    std::error_code error;
    std::filesystem::create_directory(root_, error);
    if (error) {
      why_not_ = "cannot make a cgroup at " + root_ + ": " + error.message();
      return;
    }
    made_.push_back(root_);
  }
  TestCgroups(const TestCgroups&) = delete;
  TestCgroups& operator=(const TestCgroups&) = delete;
  ~TestCgroups() { remove(); }

  [[nodiscard]] const std::string& why_not() const { return why_not_; }
  [[nodiscard]] const std::string& root() const { return root_; }

  // Makes BASE/RELATIVE level by level (BASE: root() by default, or another hierarchy's group
  // adopted with adopt()) and returns its directory.
  std::string group(const std::string& relative) { return group_under(root_, relative); }
  std::string group_under(const std::string& base, const std::string& relative) {
    std::string path = base;
    std::istringstream parts(relative);
    std::string part;
    while (std::getline(parts, part, '/')) {
      if (part.empty()) continue;
      path += "/" + part;
      if (std::filesystem::create_directory(path)) made_.push_back(path);
    }
    return path;
  }
  // A group made by the caller, removed with the others.
  void adopt(const std::string& path) { made_.push_back(path); }

  // Removes every group made, deepest first. Call it once the processes in them are gone: an
  // exited process leaves its group a moment after it is reaped, so each rmdir is retried.
  void remove() {
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      wait_until([&] { return ::rmdir(it->c_str()) == 0 || errno == ENOENT; },
                 std::chrono::seconds(5));
    }
    made_.clear();
  }

 private:
  std::string why_not_;
  std::string root_;
  std::vector<std::string> made_;  // parents first
};

}  // namespace gpuclean::testing
