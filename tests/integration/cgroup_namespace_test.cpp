// Issue 17: gpuclean in a cgroup namespace of its own, as a Kubernetes DaemonSet runs it (the
// pod's cgroup namespace; contrib/k8s/daemonset.yaml). There the kernel shows every other
// process's cgroup relative to the pod's group: a host service in /system.slice/X.service
// reads "/../../system.slice/X.service" (checked here: the JSON's `cgroup`). A root service
// whose parent is init must still be `active`, not an orphan.
//
// The test's own groups stand in for the node: under "gpuclean-cgns-PID" in the cgroup v2
// hierarchy, a service group system.slice/fake-gpu.service and a pod group kubepods/pod1;
// gpuclean moves into the pod group and unshares its cgroup namespace there (`unshare
// --cgroup`), so the service reads "/../../system.slice/fake-gpu.service" — what a pod two
// levels below the root sees. Needs root; skipped without it.
// Failed before the fix (run of 2026-12-02 with the shipping binary of b5d8586, whose
// classify.cpp required "/system.slice/" at the start): class "orphan" for the service, and
// `check --ignore-pid OTHER` exited 1 with "gpuclean: device files held by orphan pid N
// (holder_helper): its parent is gone" for it.
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fake_nvml_fixture.h"

namespace gpuclean::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Where the cgroup v2 hierarchy is mounted (never hard-coded: /sys/fs/cgroup/unified on this
// machine's hybrid layout, /sys/fs/cgroup on the GPU machine), or "".
std::string cgroup2_mount() {
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

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// NAME's path along $PATH, or "" when it is not installed.
std::string tool(const std::string& name) {
  for (const char* dir : {"/usr/bin", "/bin", "/usr/sbin", "/sbin"}) {
    const std::string candidate = std::string(dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

class CgroupNamespaceTest : public FakeNvmlTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "making cgroups needs root";
    unshare_ = tool("unshare");
    if (unshare_.empty()) GTEST_SKIP() << "needs unshare (util-linux)";
    const std::string mount = cgroup2_mount();
    if (mount.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted";
    root_ = mount + "/gpuclean-cgns-" + std::to_string(::getpid());
    std::error_code error;
    fs::create_directory(root_, error);
    if (error) GTEST_SKIP() << "cannot make a cgroup at " << root_ << ": " << error.message();
    made_.push_back(root_);
  }

  void TearDown() override {
    FakeNvmlTest::TearDown();  // every process the test started is gone: the groups empty
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      // An exited process leaves its group a moment after it is reaped.
      wait_until([&] { return ::rmdir(it->c_str()) == 0 || errno == ENOENT; }, 5s);
    }
  }

  // Makes root_/RELATIVE (each level) and returns its directory.
  std::string group(const std::string& relative) {
    std::string path = root_;
    std::istringstream parts(relative);
    std::string part;
    while (std::getline(parts, part, '/')) {
      if (part.empty()) continue;
      path += "/" + part;
      if (fs::create_directory(path)) made_.push_back(path);
    }
    return path;
  }

  // A daemon (double fork, setsid: its parent is init) holding the device file, moved into
  // root_/RELATIVE.
  pid_t daemon_in(const std::string& relative) {
    const std::vector<pid_t> pids = start("daemon", held_);
    EXPECT_EQ(pids.size(), 1u);
    if (pids.empty()) return 0;
    const std::string dir = group(relative);
    EXPECT_TRUE(write_text(dir + "/cgroup.procs", std::to_string(pids[0]))) << dir;
    return pids[0];
  }

  // gpuclean ARGS, run from the group root_/RELATIVE in a cgroup namespace rooted there, with
  // the fake NVML: one idle GPU (a node service holds the files but no memory, as
  // nvidia-persistenced does; without NVML every holder but a monitor is a problem).
  CommandResult gpuclean_in_namespace(const std::string& relative,
                                      const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/bin/sh",
                                     "-c",
                                     "echo $$ > \"$0/cgroup.procs\" && exec \"$@\"",
                                     group(relative),
                                     unshare_,
                                     "--cgroup",
                                     GPUCLEAN_SHIPPING_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--device-glob", held_});
    return run_command(argv, fake_env(variant_dir("r580"), scenario("used 0 0\n")), 60s);
  }

  std::string unshare_;
  std::string root_;
  std::vector<std::string> made_;  // groups made, parents first
};

TEST_F(CgroupNamespaceTest, AHostServiceIsNotAnOrphanFromAPodsCgroupNamespace) {
  const pid_t service = daemon_in("system.slice/fake-gpu.service");
  // Negative control: a daemon in another pod's group, seen from the same namespace, is the
  // orphan it is ("/../pod2": not a service's path once the "/.." are skipped).
  const pid_t stray = daemon_in("kubepods/pod2");
  ASSERT_GT(service, 0);
  ASSERT_GT(stray, 0);
  const CommandResult result = gpuclean_in_namespace("kubepods/pod1", {"status", "--json"});
  ASSERT_LE(result.exit_code, 1) << result.err;
  const json doc = json::parse(result.out, nullptr, false);
  const json* s = find_holder(doc, service);
  ASSERT_NE(s, nullptr) << result.out;
  // What the kernel really shows from inside the namespace.
  EXPECT_EQ(s->at("cgroup"), "/../../system.slice/fake-gpu.service") << s->dump(1);
  EXPECT_EQ(s->at("ppid"), 1);
  EXPECT_EQ(s->at("class"), "active") << s->dump(1);
  const json* o = find_holder(doc, stray);
  ASSERT_NE(o, nullptr) << result.out;
  EXPECT_EQ(o->at("cgroup"), "/../pod2");
  EXPECT_EQ(o->at("class"), "orphan");

  // `check`: only the other pod's orphan is a problem.
  const CommandResult check = gpuclean_in_namespace("kubepods/pod1", {"check"});
  EXPECT_EQ(check.exit_code, 1) << check.err;
  EXPECT_NE(check.out.find("orphan pid " + std::to_string(stray)), std::string::npos) << check.out;
  EXPECT_EQ(check.out.find("pid " + std::to_string(service)), std::string::npos) << check.out;
  // And with the orphan excused, the node is clean: the service makes no problem.
  const CommandResult clean =
      gpuclean_in_namespace("kubepods/pod1", {"check", "--ignore-pid", std::to_string(stray)});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_EQ(clean.out, "");
}

}  // namespace
}  // namespace gpuclean::testing
