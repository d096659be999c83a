// What stands between a GPU and a reset (src/diagnose/reset_plan.h, issue 53), from diagnoses
// built by hand: each blocker named, in the order it is cleared, with what refuses the reset.
#include "diagnose/reset_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "output/reset_view.h"

namespace gpuclean::diagnose {
namespace {

constexpr Bytes kGiB = Bytes{1} << 30;

GpuReport gpu(unsigned index) {
  GpuReport r;
  r.gpu.index = index;
  r.gpu.minor = index;
  r.gpu.uuid = "GPU-" + std::to_string(index);
  r.gpu.pci_bus_id = "00000000:0" + std::to_string(index) + ":00.0";
  r.gpu.persistence_mode = false;
  r.gpu.mig_enabled = false;
  return r;
}

Holder holder(Pid pid, HolderClass klass, const std::string& user, unsigned on_gpu,
              std::vector<std::string> argv = {"python3", "serve.py"}) {
  Holder h;
  h.process.pid = pid;
  h.process.user = user;
  h.process.uid = user == "root" ? 0 : 1000 + static_cast<Uid>(pid);
  h.process.cmdline = std::move(argv);
  h.klass = klass;
  h.gpu_memory = {{on_gpu, 2 * kGiB}};
  return h;
}

Holder in_unit(Holder h, NodeService service, const std::string& unit) {
  h.service = service;
  Owner owner;
  owner.kind = Owner::Kind::kSystemdUnit;
  owner.id = unit;
  h.process.owner = owner;
  return h;
}

ResetFacts root_facts() {
  ResetFacts facts;
  facts.root = true;
  return facts;
}

// GPU 0: alice's orphaned server 42 with its worker 43 (named by its problem), bob's job at work
// 50, DCGM's host engine in its unit, persistence mode on; GPU 1: nothing.
Diagnosis node() {
  Diagnosis d;
  d.gpus = {gpu(0), gpu(1)};
  d.gpus[0].gpu.persistence_mode = true;
  d.holders = {holder(42, HolderClass::kOrphan, "alice", 0),
               holder(43, HolderClass::kActive, "alice", 0),
               holder(50, HolderClass::kActive, "bob", 0, {"python", "train.py"}),
               in_unit(holder(900, HolderClass::kMonitor, "root", 0, {"/usr/bin/nv-hostengine"}),
                       NodeService::kDcgm, "nvidia-dcgm.service")};
  Problem orphan;
  orphan.kind = ProblemKind::kOrphan;
  orphan.pid = 42;
  orphan.descendants = {43};
  d.problems = {orphan};
  return d;
}

std::vector<std::string> kinds(const GpuResetPlan& plan) {
  std::vector<std::string> out;
  for (const ResetBlocker& b : plan.blockers) {
    out.push_back(std::string(to_string(b.kind)) + (b.refuses ? "!" : ""));
  }
  return out;
}

TEST(ResetPlan, EachBlockerInTheOrderItIsCleared) {
  const ResetPlan plan = plan_reset(node(), root_facts(), {.gpus = {0}});
  ASSERT_EQ(plan.gpus.size(), 1U);
  const GpuResetPlan& g = plan.gpus[0];
  // Leftovers killed first, then the job at work (refusing), the services, the GPU's state.
  EXPECT_EQ(kinds(g),
            (std::vector<std::string>{"leftover", "active-job!", "service", "persistence-mode"}));
  EXPECT_EQ(g.blockers[0].pids, (std::vector<Pid>{42, 43})) << "the dead job whole, its root first";
  EXPECT_NE(g.blockers[0].how.find("gpuclean kill 42"), std::string::npos);
  EXPECT_NE(g.blockers[1].what.find("bob"), std::string::npos) << "another user's job, named";
  EXPECT_EQ(g.blockers[2].unit, "nvidia-dcgm.service");
  EXPECT_EQ(g.blockers[2].how, "systemctl stop nvidia-dcgm.service, started again after");
  EXPECT_EQ(g.blockers[3].how, "nvidia-smi -pm 0 -i 0, and -pm 1 again after");
  EXPECT_EQ(g.command, "nvidia-smi --gpu-reset -i 0");
  EXPECT_EQ(g.checks.size(), 3U);
  EXPECT_FALSE(plan.runnable()) << "bob's job refuses it";
}

TEST(ResetPlan, ForceTakesTheJobAtWorkAlong) {
  const ResetPlan plan = plan_reset(node(), root_facts(), {.gpus = {0}, .force = true});
  EXPECT_EQ(kinds(plan.gpus[0])[1], "active-job");
  EXPECT_NE(plan.gpus[0].blockers[1].how.find("--force"), std::string::npos);
  EXPECT_TRUE(plan.runnable());
}

TEST(ResetPlan, AnotherGpusHoldersDoNotBlockIt) {
  const ResetPlan plan = plan_reset(node(), root_facts(), {.gpus = {1}});
  ASSERT_EQ(plan.gpus.size(), 1U);
  EXPECT_EQ(plan.gpus[0].gpu, 1U);
  EXPECT_TRUE(plan.gpus[0].blockers.empty());
  EXPECT_TRUE(plan.runnable());
  // Its device file open, no memory counted: a holder all the same (negative control above).
  Diagnosis d = node();
  HeldFile file;
  file.path = "/dev/nvidia1";
  file.nvidia_minor = 1;
  d.holders[2].devices = {file};
  EXPECT_EQ(kinds(plan_reset(d, root_facts(), {.gpus = {1}}).gpus[0]),
            std::vector<std::string>{"active-job!"});
}

TEST(ResetPlan, WhatOnlyAPersonClearsRefusesIt) {
  Diagnosis d;
  d.gpus = {gpu(0)};
  d.gpus[0].gpu.mig_enabled = true;
  Holder foreign = holder(7000, HolderClass::kForeign, "", 0);
  foreign.visible = false;
  d.holders = {holder(60, HolderClass::kStuck, "carol", 0),
               in_unit(holder(61, HolderClass::kMonitor, "root", 0), NodeService::kMonitorTool, ""),
               foreign};
  d.holders[1].process.owner.reset();  // a service no unit runs
  ResetFacts facts;                    // not root
  facts.drivers = {{"00000000:00:00.0", "vfio-pci"}};
  const ResetPlan plan = plan_reset(d, facts, {});
  EXPECT_EQ(kinds(plan.gpus[0]),
            (std::vector<std::string>{"out-of-reach!", "out-of-reach!", "service!", "mig!", "vfio!",
                                      "not-root!"}));
  EXPECT_NE(plan.gpus[0].blockers[0].how.find("reboot"), std::string::npos) << "stuck in D";
  EXPECT_NE(plan.gpus[0].blockers[3].how.find("nvidia-smi mig -dci -i 0"), std::string::npos);
  EXPECT_FALSE(plan_reset(d, facts, {.force = true}).runnable()) << "--force ends jobs only";
}

TEST(ResetPlan, MpsGoesDownItsOwnWayAndPersistencedIsStoppedNotPersistenceMode) {
  Diagnosis d;
  d.gpus = {gpu(0)};
  d.gpus[0].gpu.persistence_mode = true;
  Holder mps = holder(70, HolderClass::kMonitor, "root", 0, {"nvidia-cuda-mps-control", "-d"});
  mps.service = NodeService::kMpsControl;
  d.holders = {mps, in_unit(holder(71, HolderClass::kMonitor, "root", 0),
                            NodeService::kPersistenced, "nvidia-persistenced.service")};
  const ResetPlan plan = plan_reset(d, root_facts(), {});
  EXPECT_EQ(kinds(plan.gpus[0]), (std::vector<std::string>{"service", "service"}));
  EXPECT_NE(plan.gpus[0].blockers[0].how.find("echo quit | nvidia-cuda-mps-control"),
            std::string::npos);
  EXPECT_TRUE(plan.runnable());
}

TEST(ResetPlan, AnNvswitchSystemWithoutFabricManagerResetsItsGpusTogether) {
  Diagnosis d;
  d.gpus = {gpu(0), gpu(1), gpu(2)};
  ResetFacts facts = root_facts();
  facts.nvswitches = {"0000:a1:00.0", "0000:a2:00.0"};
  ResetPlan plan = plan_reset(d, facts, {.gpus = {1}});
  ASSERT_EQ(plan.gpus.size(), 3U) << "every GPU of the domain is planned";
  EXPECT_EQ(plan.gpus[1].command, "nvidia-smi --gpu-reset");
  EXPECT_EQ(plan.gpus[1].reset_together, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(kinds(plan.gpus[1]), std::vector<std::string>{"nvlink-domain"});
  // With Fabric Manager running, one GPU alone, and Fabric Manager is left running.
  Holder fm = in_unit(holder(80, HolderClass::kMonitor, "root", 1, {"/usr/bin/nv-fabricmanager"}),
                      NodeService::kFabricManager, "nvidia-fabricmanager.service");
  d.holders = {fm};
  plan = plan_reset(d, facts, {.gpus = {1}});
  ASSERT_EQ(plan.gpus.size(), 1U);
  EXPECT_EQ(plan.gpus[0].command, "nvidia-smi --gpu-reset -i 1");
  EXPECT_TRUE(plan.gpus[0].blockers.empty()) << "Fabric Manager is not stopped";
}

TEST(ResetPlan, TheDrmModuleIsNamedAndNamesAreEscaped) {
  Diagnosis d;
  d.gpus = {gpu(0)};
  d.holders = {holder(90, HolderClass::kActive, "eve", 0, {"evil\x1b]0;pwned\x07", "x"})};
  ResetFacts facts = root_facts();
  facts.drm_loaded = true;
  facts.drm_modeset = true;
  const ResetPlan plan = plan_reset(d, facts, {});
  EXPECT_EQ(kinds(plan.gpus[0]), (std::vector<std::string>{"active-job!", "display"}));
  EXPECT_EQ(plan.gpus[0].blockers[0].what.find('\x1b'), std::string::npos);
  EXPECT_NE(plan.gpus[0].blockers[1].how.find("modprobe -r nvidia_drm"), std::string::npos);
  const nlohmann::json doc = output::reset_plan_json(plan);
  EXPECT_EQ(doc["gpus"][0]["blockers"][1]["kind"], "display");
  EXPECT_FALSE(doc["runnable"].get<bool>());
}

}  // namespace
}  // namespace gpuclean::diagnose
