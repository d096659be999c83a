// The owner read from cgroup paths: each layout's real path shapes (as slurmd, systemd, Docker,
// Podman, containerd, CRI-O and the kubelet's two drivers make them), and paths that look like
// them but are not.
#include "procfs/owner.h"

#include "diagnose/owner_match.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuclean::procfs {
namespace {

const std::string kId = "3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708";

Owner must(std::string_view path) {
  auto owner = owner_from_cgroup_path(path);
  EXPECT_TRUE(owner.has_value()) << path;
  return owner.value_or(Owner{});
}

TEST(OwnerTest, SlurmV2StepTask) {
  Owner o = must("/system.slice/slurmstepd.scope/job_4211/step_0/user/task_0");
  EXPECT_EQ(o.kind, Owner::Kind::kSlurmJob);
  EXPECT_EQ(o.id, "4211");
  EXPECT_EQ(o.step, "0");
  EXPECT_EQ(o.unit, "slurmstepd.scope");
}

TEST(OwnerTest, SlurmV2NamedSteps) {
  EXPECT_EQ(must("/system.slice/slurmstepd.scope/job_7/step_batch/user/task_0").step, "batch");
  EXPECT_EQ(must("/system.slice/slurmstepd.scope/job_7/step_extern/user/task_special").step,
            "extern");
  EXPECT_EQ(must("/system.slice/slurmstepd.scope/job_7/step_interactive/user").step, "interactive");
}

TEST(OwnerTest, SlurmstepdItselfIsNotTheJobsWork) {
  Owner o = must("/system.slice/slurmstepd.scope/job_7/step_0/slurm");
  EXPECT_EQ(o.kind, Owner::Kind::kSystemdUnit);
  EXPECT_EQ(o.id, "slurmstepd.scope");
}

TEST(OwnerTest, SlurmV1Hierarchy) {
  Owner o = must("/slurm/uid_1000/job_55/step_batch/task_0");
  EXPECT_EQ(o.kind, Owner::Kind::kSlurmJob);
  EXPECT_EQ(o.id, "55");
  EXPECT_EQ(o.step, "batch");
  EXPECT_FALSE(o.unit.has_value());
  // Several slurmd on one host (multiple-slurmd builds) name their root slurm_NODE.
  EXPECT_EQ(must("/slurm_node3/uid_0/job_9/step_1").id, "9");
  // The job level alone (the job's own group, before a step starts).
  Owner job = must("/slurm/uid_1000/job_55");
  EXPECT_EQ(job.id, "55");
  EXPECT_FALSE(job.step.has_value());
}

TEST(OwnerTest, AJobNamedGroupOutsideSlurmsLayoutIsNoJob) {
  // A user's own delegated groups may be named anything.
  Owner o = must("/user.slice/user-1000.slice/user@1000.service/app.slice/job_5/step_0");
  EXPECT_EQ(o.kind, Owner::Kind::kSystemdUnit);
  EXPECT_EQ(o.id, "user@1000.service");
  EXPECT_EQ(must("/slurm/job_5/step_0").kind, Owner::Kind::kCgroup);  // no uid_ level
  EXPECT_EQ(must("/slurm/uid_x/job_5").kind, Owner::Kind::kCgroup);   // not a uid
  EXPECT_EQ(must("/x/slurmstepd.scope/job_5a/step_0").kind, Owner::Kind::kSystemdUnit);
}

TEST(OwnerTest, DockerSystemdAndCgroupfsDrivers) {
  Owner systemd = must("/system.slice/docker-" + kId + ".scope");
  EXPECT_EQ(systemd.kind, Owner::Kind::kContainer);
  EXPECT_EQ(systemd.id, kId.substr(0, 12));
  EXPECT_EQ(systemd.full_id, kId);
  EXPECT_EQ(systemd.runtime, "docker");
  EXPECT_EQ(systemd.unit, "docker-" + kId + ".scope");
  Owner cgroupfs = must("/docker/" + kId);
  EXPECT_EQ(cgroupfs.kind, Owner::Kind::kContainer);
  EXPECT_EQ(cgroupfs.runtime, "docker");
  EXPECT_FALSE(cgroupfs.unit.has_value());
  // A group inside the container (systemd or docker-in-docker): the outer container owns it.
  EXPECT_EQ(must("/docker/" + kId + "/docker/" + std::string(64, 'a')).full_id, kId);
}

TEST(OwnerTest, PodmanContainerdCrio) {
  EXPECT_EQ(must("/machine.slice/libpod-" + kId + ".scope").runtime, "podman");
  EXPECT_EQ(must("/libpod_parent/libpod-" + kId).runtime, "podman");
  EXPECT_EQ(must("/system.slice/cri-containerd-" + kId + ".scope").runtime, "containerd");
  EXPECT_EQ(must("/system.slice/crio-" + kId + ".scope").runtime, "cri-o");
}

TEST(OwnerTest, ABare64DigitGroupIsAContainerOnlyUnderDocker) {
  EXPECT_EQ(must("/mine/" + kId).kind, Owner::Kind::kCgroup);
  EXPECT_EQ(must("/system.slice/docker-" + kId.substr(1) + ".scope").kind,
            Owner::Kind::kSystemdUnit);  // 63 digits: not an ID
}

TEST(OwnerTest, KubernetesSystemdDriver) {
  const std::string pod = "kubepods-burstable-pod8a3e1c2d_4b5f_6a7b_8c9d_0e1f2a3b4c5d.slice";
  Owner c =
      must("/kubepods.slice/kubepods-burstable.slice/" + pod + "/cri-containerd-" + kId + ".scope");
  EXPECT_EQ(c.kind, Owner::Kind::kContainer);
  EXPECT_EQ(c.id, kId.substr(0, 12));
  EXPECT_EQ(c.runtime, "containerd");
  EXPECT_EQ(c.pod_uid, "8a3e1c2d-4b5f-6a7b-8c9d-0e1f2a3b4c5d");
  EXPECT_EQ(c.qos, "burstable");
  // Guaranteed pods sit directly under kubepods.slice.
  Owner g = must("/kubepods.slice/kubepods-pod8a3e1c2d_4b5f_6a7b_8c9d_0e1f2a3b4c5d.slice/crio-" +
                 kId + ".scope");
  EXPECT_EQ(g.qos, "guaranteed");
  EXPECT_EQ(g.runtime, "cri-o");
  // CRI-O's conmon and the sandbox are the pod's, not a container's.
  Owner p = must(
      "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podabc_12.slice/"
      "crio-conmon-" +
      kId + ".scope");
  EXPECT_EQ(p.kind, Owner::Kind::kPod);
  EXPECT_EQ(p.id, "abc-12");
  EXPECT_EQ(p.qos, "besteffort");
}

TEST(OwnerTest, KubernetesCgroupfsDriver) {
  Owner c = must("/kubepods/besteffort/pod8a3e1c2d-4b5f-6a7b-8c9d-0e1f2a3b4c5d/" + kId);
  EXPECT_EQ(c.kind, Owner::Kind::kContainer);
  EXPECT_EQ(c.pod_uid, "8a3e1c2d-4b5f-6a7b-8c9d-0e1f2a3b4c5d");
  EXPECT_EQ(c.qos, "besteffort");
  EXPECT_FALSE(c.runtime.has_value());
  EXPECT_EQ(must("/kubepods/pod8a3e/" + kId).qos, "guaranteed");
}

TEST(OwnerTest, SeenFromInsideACgroupNamespace) {
  // A DaemonSet's gpuclean in a pod with its own cgroup namespace sees host paths so.
  Owner o = must("/../../system.slice/slurmstepd.scope/job_3/step_0/user/task_0");
  EXPECT_EQ(o.kind, Owner::Kind::kSlurmJob);
  EXPECT_EQ(o.id, "3");
  EXPECT_EQ(must("/../../../system.slice/nvidia-persistenced.service").id,
            "nvidia-persistenced.service");
}

TEST(OwnerTest, SystemdUnitsAndRawPaths) {
  EXPECT_EQ(must("/system.slice/ssh.service").id, "ssh.service");
  EXPECT_EQ(must("/user.slice/user-1000.slice/session-3.scope").id, "session-3.scope");
  // Below the user's manager every name is the user's own: the manager's unit is the owner.
  EXPECT_EQ(must("/user.slice/user-1000.slice/user@1000.service/app.slice/app-tmux.scope").id,
            "user@1000.service");
  Owner raw = must("/process_api/9ab60ac0");
  EXPECT_EQ(raw.kind, Owner::Kind::kCgroup);
  EXPECT_EQ(raw.id, "/process_api/9ab60ac0");
  EXPECT_EQ(must("/user.slice").kind, Owner::Kind::kCgroup);
  EXPECT_FALSE(owner_from_cgroup_path("/").has_value());
  EXPECT_FALSE(owner_from_cgroup_path("").has_value());
  EXPECT_FALSE(owner_from_cgroup_path("/../..").has_value());
}

TEST(OwnerTest, FileV2LineFirst) {
  auto o = owner_from_cgroup_file("0::/system.slice/docker-" + kId + ".scope\n");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->runtime, "docker");
}

TEST(OwnerTest, FileAV1SlurmJobWinsOverAV2UnitOrRoot) {
  // Slurm's cgroup/v1 plugin on a hybrid host: the unified (v2) line is slurmd's unit or "/".
  const std::string v1 =
      "9:name=systemd:/system.slice/slurmd.service\n"
      "6:freezer:/slurm/uid_0/job_12/step_0/task_0\n"
      "4:memory:/slurm/uid_0/job_12/step_0/task_0\n";
  auto under_unit = owner_from_cgroup_file(v1 + "0::/system.slice/slurmd.service\n");
  ASSERT_TRUE(under_unit);
  EXPECT_EQ(under_unit->kind, Owner::Kind::kSlurmJob);
  EXPECT_EQ(under_unit->id, "12");
  auto at_root = owner_from_cgroup_file(v1 + "0::/\n");
  ASSERT_TRUE(at_root);
  EXPECT_EQ(at_root->id, "12");
}

TEST(OwnerTest, FileRootV2AndUnknownV1IsNoOwner) {
  // This project's CI machines: v2 at the root, a v1 memory group of the sandbox.
  EXPECT_FALSE(owner_from_cgroup_file("9:name=systemd:/\n4:memory:/process_api/9ab6\n0::/\n"));
}

TEST(OwnerTest, FileWithoutV2UsesTheSystemdHierarchy) {
  auto o = owner_from_cgroup_file("2:cpu:/\n1:name=systemd:/system.slice/cron.service\n");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->id, "cron.service");
  EXPECT_FALSE(owner_from_cgroup_file(""));
  EXPECT_FALSE(owner_from_cgroup_file("garbage\n::\n"));
}

// Slurm's v1 plugins (proctrack/cgroup + task/cgroup, PrologFlags=Contain) put slurmstepd at the
// job level of the freezer hierarchy and at a step of the devices one (seen on this project's
// one-node Slurm, tests/slurm/run.sh); the job's tasks are at a step or below everywhere.
// Before: both read as "job 1, step extern", and `kill --job 1` planned slurmstepd on a running
// job (reported by the Slurm test's author from `kill --dry-run --job 1`).
TEST(OwnerTest, FileSlurmstepdAtTheV1JobLevelIsNotTheJobsWork) {
  const std::string stepd =
      "5:devices:/slurm_vm/uid_0/job_1/step_extern\n6:freezer:/slurm_vm/uid_0/job_1\n0::/\n";
  const std::string task =
      "5:devices:/slurm_vm/uid_0/job_1/step_0/task_0\n"
      "6:freezer:/slurm_vm/uid_0/job_1/step_0\n0::/\n";
  auto daemon = owner_from_cgroup_file(stepd);
  ASSERT_TRUE(daemon);
  EXPECT_EQ(daemon->kind, Owner::Kind::kSlurmJob);
  EXPECT_EQ(daemon->id, "1");
  EXPECT_FALSE(daemon->step.has_value());
  auto work = owner_from_cgroup_file(task);
  ASSERT_TRUE(work);
  EXPECT_EQ(work->step, "0");

  diagnose::OwnerSelector job_1;
  job_1.jobs = {"1"};
  ProcessInfo p;
  p.owner = daemon;
  EXPECT_FALSE(diagnose::owner_match(p, job_1)) << "slurmstepd is not a --job target";
  p.owner = work;
  EXPECT_TRUE(diagnose::owner_match(p, job_1)) << "the job's task is";
  job_1.jobs = {"2"};
  EXPECT_FALSE(diagnose::owner_match(p, job_1)) << "another job's selector";
}

// Issue 33, finding 2: in the subtree systemd delegates to a user (user@UID.service), the user
// names the groups. Before the fix (9c7663b) each of these was the owner it imitates: "job
// 4243.0", a container with the real container's ID, a pod (rootless Podman's containers were
// containers too; they are the user's own groups, and so the user's unit now).
TEST(OwnerTest, NothingBelowAUsersManagerIsAJobContainerOrPod) {
  const std::string user = "/user.slice/user-1000.slice/user@1000.service";
  for (const std::string& inside : std::vector<std::string>{
           "/app.slice/slurmstepd.scope/job_4243/step_0/user/task_0",
           "/slurm/uid_0/job_4243/step_0/task_0", "/app.slice/docker-" + kId + ".scope",
           "/docker/" + kId, "/kubepods/besteffort/pod8a3e1c2d/" + kId,
           "/user.slice/libpod-" + kId + ".scope/container"}) {
    Owner o = must(user + inside);
    EXPECT_EQ(o.kind, Owner::Kind::kSystemdUnit) << inside;
    EXPECT_EQ(o.id, "user@1000.service") << inside;
  }
  // Negative control: the same groups where their managers make them.
  EXPECT_EQ(must("/system.slice/slurmstepd.scope/job_4243/step_0/user/task_0").id, "4243");
  EXPECT_EQ(must("/system.slice/docker-" + kId + ".scope").kind, Owner::Kind::kContainer);
}

// Where gpuclean can look at the hierarchy, names below the first group directory a non-root
// user owns are the user's (a Delegate=yes unit with User=, a group root chowned by hand).
TEST(OwnerTest, NamesBelowADirectoryAUserOwnsDoNotCount) {
  const std::string fake = "/gpuclean-test/deleg/slurmstepd.scope/job_4243/step_0";
  const std::string file = "0::" + fake + "\n";
  TrustedPrefix delegated = [](std::string_view, std::string_view path) {
    return std::optional<std::string>(std::string(path.substr(0, path.find("/slurmstepd"))));
  };
  auto o = owner_from_cgroup_file(file, delegated);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->kind, Owner::Kind::kCgroup);
  EXPECT_EQ(o->id, "/gpuclean-test/deleg");
  // Negative controls: root owns every directory, or gpuclean cannot look.
  TrustedPrefix all_root = [](std::string_view, std::string_view path) {
    return std::optional<std::string>(path);
  };
  TrustedPrefix cannot_tell = [](std::string_view, std::string_view) {
    return std::optional<std::string>();
  };
  EXPECT_EQ(owner_from_cgroup_file(file, all_root)->id, "4243");
  EXPECT_EQ(owner_from_cgroup_file(file, cannot_tell)->id, "4243");
}

// Issue 33, finding 2 (hybrid hosts): a job's process that moved its v2 group into a look-alike
// job_999 was job 999 (the v2 line won), and escaped `kill --job 100` of its real job, which
// its v1 lines still name. Slurm's plugin is v1 there: the v1 job wins.
TEST(OwnerTest, OnAHybridHostAV2LookAlikeJobDoesNotHideTheV1Job) {
  const std::string v1 = "5:devices:/slurm_vm/uid_1000/job_100/step_0/task_0\n";
  auto o = owner_from_cgroup_file(
      v1 + "0::/user.slice/user-1000.slice/session-1.scope/slurmstepd.scope/job_999/step_0\n");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->id, "100");
  // Negative control: a v2 job with no v1 job beside it (Slurm on cgroup v2) is that job.
  auto v2_only = owner_from_cgroup_file(
      "5:devices:/\n0::/system.slice/slurmstepd.scope/job_999/step_0/user/task_0\n");
  ASSERT_TRUE(v2_only);
  EXPECT_EQ(v2_only->id, "999");
}

// Issue 35: `gpuclean run`'s group (gpuclean-run.PID, where root made it) is the run's: its
// holders showed the raw path (kind cgroup, "a layout gpuclean does not know") before.
TEST(OwnerTest, ARunsGroupWhereRootMadeItIsTheRun) {
  TrustedPrefix all_root = [](std::string_view, std::string_view path) {
    return std::optional<std::string>(path);
  };
  const std::string group = "/system.slice/ssh.service/gpuclean-run.4242";
  for (const std::string& path : {group, group + "/inner"}) {
    auto o = owner_from_cgroup_file("0::" + path + "\n", all_root);
    ASSERT_TRUE(o) << path;
    EXPECT_EQ(o->kind, Owner::Kind::kRun) << path;
    EXPECT_EQ(o->id, "4242");
    EXPECT_EQ(o->full_id, group);  // what `kill --cgroup` is given
    EXPECT_EQ(o->unit, "ssh.service");
  }
  // A run in a job or container stays theirs: `kill --job` takes it.
  auto in_job = owner_from_cgroup_file(
      "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0/gpuclean-run.9\n", all_root);
  ASSERT_TRUE(in_job);
  EXPECT_EQ(in_job->kind, Owner::Kind::kSlurmJob);
  // Not a run: another name, no PID, a v1 hierarchy's line.
  EXPECT_EQ(owner_from_cgroup_file("0::/gpuclean-run.x\n", all_root)->kind, Owner::Kind::kCgroup);
  EXPECT_EQ(owner_from_cgroup_file("0::/gpuclean-run.\n", all_root)->kind, Owner::Kind::kCgroup);
  EXPECT_FALSE(owner_from_cgroup_file("4:freezer:/gpuclean-run.5\n0::/\n", all_root));
}

// The run's group is a name anyone who can make groups may choose: it counts only where the
// hierarchy shows root made it. Below a user's manager, below a directory a user owns, or where
// gpuclean cannot look (no view of the hierarchy), it is not a run.
TEST(OwnerTest, ARunsGroupNamedByAUserOrUnseenIsNoRun) {
  const std::string file = "0::/gpuclean-test/deleg/gpuclean-run.77\n";
  TrustedPrefix delegated = [](std::string_view, std::string_view path) {
    return std::optional<std::string>(std::string(path.substr(0, path.find("/gpuclean-run"))));
  };
  TrustedPrefix cannot_tell = [](std::string_view, std::string_view) {
    return std::optional<std::string>();
  };
  for (const auto& trusted : {delegated, cannot_tell, TrustedPrefix()}) {
    auto o = owner_from_cgroup_file(file, trusted);
    ASSERT_TRUE(o);
    EXPECT_EQ(o->kind, Owner::Kind::kCgroup);
  }
  EXPECT_EQ(owner_from_cgroup_file(file, delegated)->id, "/gpuclean-test/deleg");
  EXPECT_EQ(owner_from_cgroup_file(file, cannot_tell)->id, "/gpuclean-test/deleg/gpuclean-run.77");
  auto user = owner_from_cgroup_file(
      "0::/user.slice/user-1000.slice/user@1000.service/app.slice/gpuclean-run.5\n",
      [](std::string_view, std::string_view path) { return std::optional<std::string>(path); });
  ASSERT_TRUE(user);
  EXPECT_EQ(user->kind, Owner::Kind::kSystemdUnit);
  EXPECT_EQ(user->id, "user@1000.service");
}

}  // namespace
}  // namespace gpuclean::procfs
