// Owners on this machine's real cgroups: groups made with each owner kind's real path shape
// (Slurm v2 and v1, Docker, Kubernetes), a holder moved into each, and the owner read back;
// `kill --job` / `--container` end exactly their owner's processes (holders or not) and nothing
// else, and `status --job` shows only that job's holders.
//
// Every group is made under a group of this test's own ("gpuclean-test-PID", in the cgroup v2
// hierarchy and, for Slurm's v1 layout, in the v1 freezer hierarchy as slurm_gpuclean_PID), so
// the machine's real Slurm, Docker or kubelet groups are never touched: the layouts are
// recognised anywhere in a path (procfs/owner.h). Needs root; skipped without it.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "freezer.h"
#include "holder_fixture.h"
#include "test_cgroups.h"
#include "test_user.h"

namespace gpuclean::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string str(pid_t pid) {
  return std::to_string(pid);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string kContainerA(64, 'a');
const std::string kContainerB = std::string(12, 'a') + std::string(52, 'b');  // same 12 digits
const std::string kContainerC = "c0ffee" + std::string(58, '1');
const std::string kPodUid = "8a3e1c2d-4b5f-6a7b-8c9d-0e1f2a3b4c5d";

class OwnerTest : public HolderFixture {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "making cgroups needs root";
    cgroups_.emplace("gpuclean-test");
    if (!cgroups_->why_not().empty()) GTEST_SKIP() << cgroups_->why_not();
  }

  void TearDown() override {
    HolderFixture::TearDown();  // every process the test started is gone: the groups are empty
    if (cgroups_) cgroups_->remove();
  }

  // Starts a holder of `file` and moves it into the v2 group ROOT/RELATIVE.
  pid_t holder_in(const std::string& relative, const std::string& file) {
    const pid_t pid = start("hold", file).at(0);
    move(pid, cgroups_->group(relative));
    return pid;
  }

  static void move(pid_t pid, const std::string& dir) {
    ASSERT_TRUE(write_text(dir + "/cgroup.procs", str(pid))) << dir;
    const std::string leaf = dir.substr(dir.rfind('/'));
    ASSERT_TRUE(contains(slurp("/proc/" + str(pid) + "/cgroup"), leaf))
        << dir << "\n"
        << slurp("/proc/" + str(pid) + "/cgroup");
  }

  json status_json(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"status", "--json", "--no-nvml", "--device-glob", held_};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = gpuclean(args);
    EXPECT_LE(result.exit_code, 1) << result.err;
    return json::parse(result.out, nullptr, false);
  }

  CommandResult kill(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {GPUCLEAN_BINARY, "kill",   "--no-nvml",
                                     "--device-glob", held_,    "--grace",
                                     "300ms",         "--wait", "5s"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, 30s);
  }

  static std::string both(const CommandResult& result) {
    return "exit " + std::to_string(result.exit_code) + "\n--- stdout\n" + result.out +
           "--- stderr\n" + result.err;
  }

  // A Slurm v1 root of this test's own in the freezer hierarchy ("slurm_gpuclean" + PID),
  // removed with the other groups; "" (and a failure) when it cannot be made.
  std::string v1_slurm_root() {
    const std::string base = std::string(kFreezerRoot) + "/slurm_gpuclean" + str(::getpid());
    std::error_code error;
    fs::create_directory(base, error);
    EXPECT_FALSE(error) << base << ": " << error.message();
    if (error) return "";
    cgroups_->adopt(base);
    return base;
  }

  std::optional<TestCgroups> cgroups_;
};

TEST_F(OwnerTest, EachLayoutsOwnerIsReadBack) {
  const std::string pod_slice = "kubepods-burstable-pod8a3e1c2d_4b5f_6a7b_8c9d_0e1f2a3b4c5d.slice";
  const pid_t slurm = holder_in("system.slice/slurmstepd.scope/job_4211/step_0/user/task_0", held_);
  const pid_t docker = holder_in("docker/" + kContainerC, held_);
  const pid_t pod = holder_in("kubepods.slice/kubepods-burstable.slice/" + pod_slice +
                                  "/cri-containerd-" + kContainerA + ".scope",
                              held_);
  const pid_t unit = holder_in("system.slice/inference.service", held_);
  // Negative controls: a "job" group outside Slurm's layout, and a group of no known layout.
  const pid_t lookalike = holder_in("user.slice/job_4211/step_0", held_);
  const pid_t raw = holder_in("mine", held_);

  const json doc = status_json();
  ASSERT_FALSE(doc.is_discarded());
  auto owner = [&](pid_t pid) {
    const json* h = find_holder(doc, pid);
    EXPECT_NE(h, nullptr) << pid << "\n" << doc.dump(1);
    return h == nullptr ? json() : h->at("owner");
  };
  const json s = owner(slurm);
  EXPECT_EQ(s["kind"], "slurm-job") << s;
  EXPECT_EQ(s["id"], "4211") << s;
  EXPECT_EQ(s["step"], "0") << s;
  EXPECT_EQ(s["unit"], "slurmstepd.scope") << s;
  const json d = owner(docker);
  EXPECT_EQ(d["kind"], "container") << d;
  EXPECT_EQ(d["id"], kContainerC.substr(0, 12)) << d;
  EXPECT_EQ(d["full_id"], kContainerC) << d;
  EXPECT_EQ(d["runtime"], "docker") << d;
  const json p = owner(pod);
  EXPECT_EQ(p["kind"], "container") << p;
  EXPECT_EQ(p["pod_uid"], kPodUid) << p;
  EXPECT_EQ(p["qos"], "burstable") << p;
  EXPECT_EQ(p["runtime"], "containerd") << p;
  EXPECT_EQ(owner(unit)["kind"], "systemd-unit");
  EXPECT_EQ(owner(unit)["id"], "inference.service");
  EXPECT_EQ(owner(lookalike)["kind"], "cgroup") << owner(lookalike);
  const json r = owner(raw);
  EXPECT_EQ(r["kind"], "cgroup") << r;
  EXPECT_TRUE(contains(r["id"].get<std::string>(), "/gpuclean-test-" + str(::getpid()) + "/mine"))
      << r;

  // The text screen has the OWNER column with the short labels.
  auto text = gpuclean({"status", "--no-nvml", "--device-glob", held_});
  EXPECT_TRUE(contains(text.out, "OWNER")) << text.out;
  EXPECT_TRUE(contains(text.out, "job 4211.0")) << text.out;
  EXPECT_TRUE(contains(text.out, "docker " + kContainerC.substr(0, 12))) << text.out;
  EXPECT_TRUE(contains(text.out, "pod 8a3e1c2d/" + kContainerA.substr(0, 12))) << text.out;
  auto who = gpuclean({"who", "--device-glob", held_});
  EXPECT_TRUE(contains(who.out, "OWNER")) << who.out;
  EXPECT_TRUE(contains(who.out, "job 4211.0")) << who.out;
  auto explain = gpuclean({"explain", "--no-nvml", "--device-glob", held_, str(pod)});
  EXPECT_TRUE(contains(explain.out, "containerd container " + kContainerA + " in Kubernetes pod " +
                                        kPodUid + ", QoS burstable"))
      << explain.out;
}

TEST_F(OwnerTest, NoOwnerColumnWithoutAKnownOwner) {
  // Negative control for the column: holders in the root group or a raw path only.
  const pid_t holder = holder_in("mine", held_);
  auto text = gpuclean({"status", "--no-nvml", "--device-glob", held_});
  EXPECT_EQ(text.exit_code, 1) << text.err;  // the holder is seen (a problem): the table is there
  EXPECT_TRUE(contains(text.out, " " + str(holder) + " ")) << text.out;
  EXPECT_FALSE(contains(text.out, "OWNER")) << text.out;
}

TEST_F(OwnerTest, KillJobEndsEveryProcessOfTheJobAndNothingElse) {
  const std::string job = "system.slice/slurmstepd.scope/job_" + str(::getpid() % 100000 + 7);
  const std::string job_id = str(::getpid() % 100000 + 7);
  const pid_t daemon = holder_in(job + "/step_0/user/task_0", held_);
  // Not a holder (it holds another file): the job's, so it goes too — what an Epilog needs.
  const pid_t helper = holder_in(job + "/step_batch/user/task_0", other_);
  const pid_t other_job =
      holder_in("system.slice/slurmstepd.scope/job_1/step_0/user/task_0", held_);
  const pid_t lookalike = holder_in("user.slice/job_" + job_id + "/step_0", held_);
  // slurmstepd's own leaf is the job's infrastructure, not its work.
  const pid_t stepd = holder_in(job + "/step_0/slurm", other_);

  // The plan names exactly the job's two processes.
  auto plan = kill({"--job", job_id, "--dry-run"});
  EXPECT_EQ(plan.exit_code, 0) << both(plan);
  EXPECT_TRUE(contains(plan.out, "Plan: 2 processes")) << both(plan);
  EXPECT_TRUE(contains(plan.out, " " + str(daemon) + " ")) << both(plan);
  EXPECT_TRUE(contains(plan.out, " " + str(helper) + " ")) << both(plan);
  EXPECT_TRUE(contains(plan.out, "job " + job_id + ".0")) << both(plan);
  for (pid_t pid : {daemon, helper, other_job, lookalike, stepd}) EXPECT_TRUE(alive(pid)) << pid;

  // A broad selector: without --yes and a terminal it is refused and nothing is signalled.
  auto unconfirmed = kill({"--job", job_id});
  EXPECT_EQ(unconfirmed.exit_code, 2) << both(unconfirmed);
  EXPECT_TRUE(alive(daemon));

  auto result = kill({"--job", job_id, "--yes", "--json"});
  EXPECT_EQ(result.exit_code, 0) << both(result);
  EXPECT_TRUE(wait_gone(daemon, 5s)) << both(result);
  EXPECT_TRUE(wait_gone(helper, 5s)) << both(result);
  // They are this test's children: reaped, they leave the table (a zombie would still be in
  // the job's group, and the second run below would find it).
  reap(daemon);
  reap(helper);
  for (pid_t pid : {other_job, lookalike, stepd}) EXPECT_TRUE(alive(pid)) << pid << both(result);
  const json doc = json::parse(result.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << result.out;
  ASSERT_EQ(doc["targets"].size(), 2u) << doc.dump(1);
  EXPECT_EQ(doc["targets"][0]["owner"]["id"], job_id) << doc.dump(1);
  EXPECT_TRUE(contains(doc["targets"][0]["why"].get<std::string>(), "Slurm job " + job_id));

  // The job is gone: the Epilog's second run finds nothing and succeeds.
  auto again = kill({"--job", job_id, "--yes"});
  EXPECT_EQ(again.exit_code, 0) << both(again);
  EXPECT_TRUE(contains(again.out + again.err, "no process of Slurm job " + job_id)) << both(again);
}

TEST_F(OwnerTest, KillContainerByPrefixRefusesAnAmbiguousOne) {
  const pid_t a = holder_in("docker/" + kContainerA, held_);
  const pid_t b = holder_in("docker/" + kContainerB, held_);
  const pid_t c = holder_in("docker/" + kContainerC, other_);

  // "aaaaaaaaaaaa" is both A's and B's short ID: refused, nothing signalled.
  auto ambiguous = kill({"--container", kContainerA.substr(0, 12), "--yes"});
  EXPECT_EQ(ambiguous.exit_code, 2) << both(ambiguous);
  EXPECT_TRUE(contains(ambiguous.err, "matches 2 containers")) << both(ambiguous);
  for (pid_t pid : {a, b, c}) EXPECT_TRUE(alive(pid)) << pid;

  auto result = kill({"--container", kContainerA.substr(0, 13), "--yes"});
  EXPECT_EQ(result.exit_code, 0) << both(result);
  EXPECT_TRUE(wait_gone(a, 5s)) << both(result);
  EXPECT_TRUE(alive(b)) << both(result);
  EXPECT_TRUE(alive(c)) << both(result);

  // Not a holder of the selected files, still the container's.
  auto by_short = kill({"--container", "c0ffee", "--yes"});
  EXPECT_EQ(by_short.exit_code, 0) << both(by_short);
  EXPECT_TRUE(wait_gone(c, 5s)) << both(by_short);
  EXPECT_TRUE(alive(b));
}

TEST_F(OwnerTest, StatusJobShowsOnlyThatJobsHolders) {
  const pid_t mine = holder_in("system.slice/slurmstepd.scope/job_31/step_0/user/task_0", held_);
  const pid_t theirs = holder_in("system.slice/slurmstepd.scope/job_32/step_0/user/task_0", held_);
  const json all = status_json();
  EXPECT_NE(find_holder(all, mine), nullptr);
  EXPECT_NE(find_holder(all, theirs), nullptr);  // control: both are seen unfiltered
  const json only = status_json({"--job", "31"});
  EXPECT_NE(find_holder(only, mine), nullptr) << only.dump(1);
  EXPECT_EQ(find_holder(only, theirs), nullptr) << only.dump(1);
  const json none = status_json({"--job", "33"});
  EXPECT_TRUE(none["holders"].empty()) << none.dump(1);
  EXPECT_EQ(none["verdict"], "clean");
}

TEST_F(OwnerTest, SlurmV1LayoutInTheFreezerHierarchy) {
  // Slurm's cgroup/v1 plugin: the job's group is in the v1 controllers' hierarchies, and the
  // v2 line says nothing about it (on this machine's hybrid layout it is "/").
  if (!freezer_mounted()) GTEST_SKIP() << "no cgroup v1 freezer mounted at " << kFreezerRoot;
  const std::string base = v1_slurm_root();
  ASSERT_FALSE(base.empty());
  const std::string dir = cgroups_->group_under(base, "uid_0/job_808/step_extern/task_0");
  const pid_t holder = start("hold", held_).at(0);
  move(holder, dir);
  const json doc = status_json();
  const json* h = find_holder(doc, holder);
  ASSERT_NE(h, nullptr) << doc.dump(1);
  EXPECT_EQ(h->at("owner")["kind"], "slurm-job") << h->dump(1);
  EXPECT_EQ(h->at("owner")["id"], "808");
  EXPECT_EQ(h->at("owner")["step"], "extern");

  auto result = kill({"--job", "808", "--yes"});
  EXPECT_EQ(result.exit_code, 0) << both(result);
  EXPECT_TRUE(wait_gone(holder, 5s)) << both(result);
}

// Issue 33, finding 2 (hybrid hosts): a job's process in Slurm's v1 groups that moved its v2
// group into a look-alike job escaped `kill --job` of its real job: the v2 line won. On the
// old code (9c7663b, 2026-12-03) status named the look-alike job ("30327" for "30326"), the
// look-alike's plan took the process and `kill --job` of the real job did not end it.
TEST_F(OwnerTest, AV2LookAlikeDoesNotHideAV1SlurmJob) {
  if (!freezer_mounted()) GTEST_SKIP() << "no cgroup v1 freezer mounted at " << kFreezerRoot;
  const std::string base = v1_slurm_root();
  ASSERT_FALSE(base.empty());
  const std::string real_job = str(::getpid() % 100000 + 13);
  const std::string fake_job = str(::getpid() % 100000 + 14);
  const pid_t holder = start("hold", held_).at(0);
  move(holder, cgroups_->group_under(base, "uid_0/job_" + real_job + "/step_0/task_0"));
  move(holder, cgroups_->group("system.slice/slurmstepd.scope/job_" + fake_job + "/step_0"));
  const json doc = status_json();
  const json* h = find_holder(doc, holder);
  ASSERT_NE(h, nullptr) << doc.dump(1);
  EXPECT_EQ(h->at("owner")["id"], real_job) << h->dump(1);

  auto fake = kill({"--job", fake_job, "--dry-run"});
  EXPECT_FALSE(contains(fake.out, " " + str(holder) + " ")) << both(fake);
  auto real = kill({"--job", real_job, "--yes"});
  EXPECT_EQ(real.exit_code, 0) << both(real);
  EXPECT_TRUE(wait_gone(holder, 5s)) << both(real);
}

// Issue 33, finding 2: a group root delegated to a user (chowned, as systemd's Delegate=yes
// does) in which the user names groups like a manager's. A real process of a throwaway user
// moves itself into a look-alike Slurm job group and into a look-alike Docker scope that shares
// a real container's 12-digit short ID. Before the fix the first was "job N.0", planned by
// `kill --job N` and reported by `check --job N`; the second made `kill --container SHORT`
// refuse ("matches 2 containers"). (Run against the binary of 057497e: see the commit.)
TEST_F(OwnerTest, LookAlikesInADelegatedGroupOwnNothing) {
  std::string why_not;
  const auto user = test_user(why_not);
  if (!user) GTEST_SKIP() << why_not;
  // The user must reach the helper and the file.
  fs::permissions(dir_.path(), fs::perms::all);
  fs::permissions(held_, fs::perms::all);
  const std::string helper = dir_.path() + "/holder_helper";
  fs::copy_file(HOLDER_HELPER, helper);

  const std::string deleg = cgroups_->group("deleg");
  for (const std::string& file :
       {std::string(), std::string("/cgroup.procs"), std::string("/cgroup.threads"),
        std::string("/cgroup.subtree_control")}) {
    ASSERT_EQ(::chown((deleg + file).c_str(), user->uid, user->gid), 0) << deleg + file;
  }
  const std::string job_id = str(::getpid() % 100000 + 11);
  // The user's holders, moved by root into the delegated group (as their manager would start
  // them there), then by the user into groups of the user's own naming.
  auto users_holder_in = [&](const std::string& relative) {
    std::vector<std::string> argv = user->as_user();
    argv.insert(argv.end(), {helper, "hold", held_, ready_});
    const pid_t pid = start_argv(argv).at(0);
    move(pid, deleg);
    std::string path = deleg;
    std::istringstream parts(relative);
    for (std::string part; std::getline(parts, part, '/');) {
      path += "/" + part;
      cgroups_->adopt(path);  // root removes them at the end, deepest first
    }
    std::vector<std::string> as = user->as_user();
    as.insert(as.end(), {"/bin/sh", "-c", "mkdir -p \"$1\" && echo \"$2\" > \"$1/cgroup.procs\"",
                         "sh", path, str(pid)});
    const auto moved = run_command(as);
    EXPECT_EQ(moved.exit_code, 0) << moved.err;
    EXPECT_TRUE(contains(slurp("/proc/" + str(pid) + "/cgroup"), relative))
        << slurp("/proc/" + str(pid) + "/cgroup");
    return pid;
  };
  const pid_t fake_job = users_holder_in("slurmstepd.scope/job_" + job_id + "/step_0/user/task_0");
  const pid_t fake_container = users_holder_in("docker-" + kContainerB + ".scope");
  // Negative controls: the same owners in groups root made.
  const pid_t real_job =
      holder_in("system.slice/slurmstepd.scope/job_" + job_id + "/step_0/user/task_0", held_);
  const pid_t real_container = holder_in("docker/" + kContainerA, held_);

  const json doc = status_json();
  auto owner = [&](pid_t pid) {
    const json* h = find_holder(doc, pid);
    EXPECT_NE(h, nullptr) << pid << "\n" << doc.dump(1);
    return h == nullptr ? json() : h->at("owner");
  };
  for (pid_t fake : {fake_job, fake_container}) {
    EXPECT_EQ(owner(fake)["kind"], "cgroup") << owner(fake);
    EXPECT_TRUE(contains(owner(fake)["id"].get<std::string>(), "/deleg")) << owner(fake);
  }
  EXPECT_EQ(owner(real_job)["id"], job_id) << owner(real_job);
  EXPECT_EQ(owner(real_container)["full_id"], kContainerA) << owner(real_container);

  auto job_plan = kill({"--job", job_id, "--dry-run"});
  EXPECT_EQ(job_plan.exit_code, 0) << both(job_plan);
  EXPECT_TRUE(contains(job_plan.out, "Plan: 1 process")) << both(job_plan);
  EXPECT_TRUE(contains(job_plan.out, " " + str(real_job) + " ")) << both(job_plan);
  EXPECT_FALSE(contains(job_plan.out, " " + str(fake_job) + " ")) << both(job_plan);
  auto check = gpuclean({"check", "--no-nvml", "--device-glob", held_, "--job", job_id});
  EXPECT_FALSE(contains(check.out + check.err, str(fake_job))) << both(check);

  auto container_plan = kill({"--container", kContainerA.substr(0, 12), "--dry-run"});
  EXPECT_EQ(container_plan.exit_code, 0) << both(container_plan);
  EXPECT_FALSE(contains(container_plan.err, "matches 2 containers")) << both(container_plan);
  EXPECT_TRUE(contains(container_plan.out, " " + str(real_container) + " "))
      << both(container_plan);
  EXPECT_FALSE(contains(container_plan.out, " " + str(fake_container) + " "))
      << both(container_plan);
  for (pid_t pid : {fake_job, fake_container, real_job, real_container}) {
    EXPECT_TRUE(alive(pid)) << pid;
  }

  // Issue 35: a run's group counts only where root made it. The user's own "gpuclean-run.N" is
  // not a run (its fix is no `kill --cgroup` of it), and killing what is in it leaves the
  // user's group alone. (The run's group that root's gpuclean makes is RunTest's.)
  const pid_t fake_run = users_holder_in("gpuclean-run." + job_id);
  const json later = status_json();
  const json* run_holder = find_holder(later, fake_run);
  ASSERT_NE(run_holder, nullptr) << later.dump(1);
  EXPECT_EQ(run_holder->at("owner")["kind"], "cgroup") << run_holder->dump();
  auto explain = gpuclean({"explain", str(fake_run), "--no-nvml", "--device-glob", held_});
  EXPECT_FALSE(contains(explain.out, "--cgroup")) << explain.out;
  const std::string fake_run_group = deleg + "/gpuclean-run." + job_id;
  auto killed = kill({str(fake_run), "--yes"});
  EXPECT_EQ(killed.exit_code, 0) << both(killed);
  EXPECT_FALSE(alive(fake_run));
  EXPECT_FALSE(contains(killed.err, "removed")) << both(killed);
  EXPECT_TRUE(fs::is_directory(fake_run_group)) << fake_run_group;
}

}  // namespace
}  // namespace gpuclean::testing
