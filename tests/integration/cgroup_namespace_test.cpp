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
#include "freezer.h"  // write_text
#include "test_cgroups.h"

namespace gpuclean::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

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
    cgroups_.emplace("gpuclean-cgns");
    if (!cgroups_->why_not().empty()) GTEST_SKIP() << cgroups_->why_not();
  }

  void TearDown() override {
    FakeNvmlTest::TearDown();  // every process the test started is gone: the groups empty
    if (cgroups_) cgroups_->remove();
  }

  std::string group(const std::string& relative) { return cgroups_->group(relative); }

  // A daemon (double fork, setsid: its parent is init) holding the device file, moved into
  // the group RELATIVE (below the test's own).
  pid_t daemon_in(const std::string& relative) {
    const std::vector<pid_t> pids = start("daemon", held_);
    EXPECT_EQ(pids.size(), 1u);
    if (pids.empty()) return 0;
    const std::string dir = group(relative);
    EXPECT_TRUE(write_text(dir + "/cgroup.procs", std::to_string(pids[0]))) << dir;
    return pids[0];
  }

  // gpuclean ARGS, run from the group RELATIVE in a cgroup namespace rooted there, with
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
  std::optional<TestCgroups> cgroups_;
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
