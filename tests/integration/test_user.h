// An unprivileged system user for tests that need one (another user's processes, a delegated
// cgroup): created once and left in place (several test processes may share it at once under
// ctest -j), and argv prefixes that run a command as that user.
#pragma once

#include <pwd.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "spawn.h"

namespace gpuclean::testing {

inline constexpr const char* kTestUser = "gpuclean-unpriv";
inline constexpr const char* kSetpriv = "/usr/bin/setpriv";  // util-linux (scripts/setup.sh)

struct TestUser {
  uid_t uid = 0;
  gid_t gid = 0;

  // The setpriv prefix that runs what follows as this user (real and effective ids, no
  // supplementary groups).
  [[nodiscard]] std::vector<std::string> as_user() const {
    return {kSetpriv, "--reuid=" + std::to_string(uid), "--regid=" + std::to_string(gid),
            "--clear-groups", "--"};
  }
};

// The user (created when missing), or the reason there cannot be one (then the test skips).
inline std::optional<TestUser> test_user(std::string& why_not) {
  if (::geteuid() != 0) {
    why_not = "needs root to create a user and to setuid to it";
    return std::nullopt;
  }
  if (::access(kSetpriv, X_OK) != 0 || ::access("/usr/sbin/useradd", X_OK) != 0) {
    why_not = "needs /usr/bin/setpriv and /usr/sbin/useradd";
    return std::nullopt;
  }
  if (::getpwnam(kTestUser) == nullptr) {
    // 9: the user exists (another test process created it just now).
    const auto added = run_command({"/usr/sbin/useradd", "--system", "--no-create-home", "--shell",
                                    "/usr/sbin/nologin", kTestUser});
    if (added.exit_code != 0 && added.exit_code != 9) {
      why_not = "useradd failed: " + added.err;
      return std::nullopt;
    }
  }
  const passwd* user = ::getpwnam(kTestUser);
  if (user == nullptr || user->pw_uid == 0) {
    why_not = std::string("no user ") + kTestUser;
    return std::nullopt;
  }
  return TestUser{user->pw_uid, user->pw_gid};
}

}  // namespace gpuclean::testing
