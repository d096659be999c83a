// Issue 32 item 3, "stuck only when stuck": classes from real kernel states, never a fixture.
//
// - A vfork parent waits in D (wait channel kernel_clone on 6.18) for as long as its child takes
//   to exec or exit. The wait is TASK_KILLABLE: a plain kill ends it. It is not `stuck`, and
//   not a `kill --leftovers` target while its own parent lives.
// - A process in a frozen cgroup is `frozen`: v1 freezer FROZEN (state D, wait channel
//   __refrigerator here), v2 cgroup.freeze (state S, get_signal here). The fix is the thaw
//   command for its group; `kill` of a v1-frozen one reports it frozen with that command, never
//   "reboot" or "GPU reset"; --leftovers never plans it.
//
// Each test starts its own holder_helper on its own temp file (--device-glob, --no-nvml) and
// thaws and removes its groups in TearDown. The negative control (a thread really in D across
// the re-check is still `stuck`) needs an uninterruptible wait that is neither a vfork nor a
// freezer: tests/fuse/stuck_process_test.cpp.
//
// Run on the old code (644b0d0: `git archive` of it with these test files, built in its own
// directory, 2026-12-03): all three failed. VforkParent…: class "stuck", status said "stuck"
// with "reboot" and "GPU reset", and `kill --leftovers --dry-run` planned the parent.
// V1Frozen…: class "stuck" and no `frozen` problem. V2Frozen…: class "active" and no `frozen`
// problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "freezer.h"
#include "holder_fixture.h"
#include "test_cgroups.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string str(pid_t pid) {
  return std::to_string(pid);
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string wchan_of(pid_t pid) {
  return slurp("/proc/" + str(pid) + "/wchan");
}

json parse(const CommandResult& result) {
  try {
    return json::parse(result.out);
  } catch (const json::exception&) {
    ADD_FAILURE() << "not JSON: " << result.out << result.err;
    return json::object();
  }
}

std::string both(const CommandResult& result) {
  return "exit " + std::to_string(result.exit_code) + "\nstdout:\n" + result.out + "stderr:\n" +
         result.err;
}

bool planned(const json& plan, pid_t pid) {
  if (!plan.contains("targets")) return false;
  return std::any_of(plan["targets"].begin(), plan["targets"].end(),
                     [pid](const json& t) { return t.value("pid", 0) == pid; });
}

// The problem of kind `kind` about pid, or nullptr.
const json* problem(const json& doc, const std::string& kind, pid_t pid) {
  if (!doc.contains("problems")) return nullptr;
  for (const json& p : doc["problems"]) {
    if (p.value("kind", "") == kind && p.contains("pid") && p["pid"] == pid) return &p;
  }
  return nullptr;
}

// Words that must never be said about a process that only waits for a thaw or a vfork child.
void expect_no_reset_advice(const std::string& text) {
  EXPECT_FALSE(contains(lower(text), "reboot")) << text;
  EXPECT_FALSE(contains(lower(text), "gpu reset")) << text;
}

class BlockedTest : public HolderFixture {
 protected:
  void TearDown() override {
    // Anything still frozen keeps a SIGKILL pending forever: thaw before killing.
    if (freezer_) freezer_->thaw();
    if (!v2_group_.empty()) write_text(v2_group_ + "/cgroup.freeze", "0");
    HolderFixture::TearDown();
    freezer_.reset();
    if (cgroups_) cgroups_->remove();
    cgroups_.reset();
  }

  std::vector<std::string> scope() const { return {"--no-nvml", "--device-glob", held_}; }
  CommandResult run(std::vector<std::string> args) {
    const auto extra = scope();
    args.insert(args.end(), extra.begin(), extra.end());
    return gpuclean(args);
  }

  std::optional<FreezerGroup> freezer_;
  std::optional<TestCgroups> cgroups_;
  std::string v2_group_;
};

TEST_F(BlockedTest, VforkParentIsNotStuckNorALeftover) {
  const auto pids = start("vfork", held_);
  ASSERT_EQ(pids.size(), 2u);
  const pid_t parent = pids[0];
  const pid_t child = pids[1];
  // The wait channel reads "0" for a moment after the state turns D.
  ASSERT_TRUE(wait_until([&] { return proc_state(parent) == 'D' && wchan_of(parent) != "0"; }, 10s))
      << "state " << proc_state(parent) << ", wchan " << wchan_of(parent);
  const std::string wchan = wchan_of(parent);
  // The shape the test is about: D, waiting for the vfork child (kernel_clone here; older
  // kernels say wait_for_vfork_done or do_fork).
  ASSERT_TRUE(contains(wchan, "clone") || contains(wchan, "vfork") || contains(wchan, "fork"))
      << "wchan " << wchan;

  auto who = run({"who", "--json"});
  const json doc = parse(who);
  const json* holder = find_holder(doc, parent);
  ASSERT_NE(holder, nullptr) << both(who);
  EXPECT_EQ((*holder)["class"], "active") << holder->dump();
  ASSERT_FALSE((*holder)["threads"].empty()) << holder->dump();
  EXPECT_EQ((*holder)["threads"][0]["state"], "D") << "gpuclean saw the D: " << holder->dump();
  EXPECT_EQ(find_holder(doc, child), nullptr) << "the child closed its copy\n" << doc.dump(1);

  auto status = run({"status"});
  EXPECT_FALSE(contains(status.out, "stuck")) << both(status);
  expect_no_reset_advice(status.out + status.err);

  auto plan = run({"kill", "--leftovers", "--dry-run", "--json"});
  EXPECT_EQ(plan.exit_code, 0) << both(plan);
  EXPECT_FALSE(planned(parse(plan), parent)) << both(plan);

  // Still waiting for its child after all of that: the classes above were about a D.
  EXPECT_EQ(proc_state(parent), 'D');
}

TEST_F(BlockedTest, V1FrozenHolderIsFrozenWithTheThawCommand) {
  if (::geteuid() != 0) GTEST_SKIP() << "freezing a cgroup needs root";
  if (!freezer_mounted()) GTEST_SKIP() << "no cgroup v1 freezer mounted at " << kFreezerRoot;
  freezer_.emplace("gpuclean-blocked-" + str(::getpid()));
  ASSERT_TRUE(freezer_->created()) << freezer_->path();
  const std::string group = freezer_->path();

  const pid_t holder = start("hold", held_).at(0);
  ASSERT_TRUE(write_text(group + "/cgroup.procs", str(holder)));
  ASSERT_TRUE(write_text(group + "/freezer.state", "FROZEN"));
  ASSERT_TRUE(wait_until([&] { return contains(slurp(group + "/freezer.state"), "FROZEN"); }, 10s))
      << slurp(group + "/freezer.state");
  ASSERT_TRUE(wait_until([&] { return proc_state(holder) == 'D'; }, 10s))
      << "state " << proc_state(holder);
  const std::string thaw = "echo THAWED > " + group + "/freezer.state";

  auto who = run({"who", "--json"});
  const json who_doc = parse(who);
  const json* listed = find_holder(who_doc, holder);
  ASSERT_NE(listed, nullptr) << both(who);
  EXPECT_EQ((*listed)["class"], "frozen") << listed->dump();

  auto status_json = run({"status", "--json"});
  EXPECT_EQ(status_json.exit_code, 1) << "a frozen holder is a problem\n" << both(status_json);
  const json status_doc = parse(status_json);
  const json* frozen = problem(status_doc, "frozen", holder);
  ASSERT_NE(frozen, nullptr) << status_doc.dump(1);
  EXPECT_TRUE(contains((*frozen)["fix"].get<std::string>(), thaw)) << frozen->dump();
  auto status = run({"status"});
  EXPECT_TRUE(contains(status.out, thaw)) << both(status);
  expect_no_reset_advice(status.out + status.err);

  auto plan = run({"kill", "--leftovers", "--dry-run", "--json"});
  EXPECT_EQ(plan.exit_code, 0) << both(plan);
  EXPECT_FALSE(planned(parse(plan), holder)) << both(plan);

  // Named, it is signalled (the SIGKILL stays pending until the thaw) and reported as frozen.
  auto kill = run({"kill", str(holder), "--grace", "200ms", "--wait", "1s"});
  EXPECT_EQ(kill.exit_code, 1) << both(kill);
  EXPECT_TRUE(contains(kill.out + kill.err, "frozen")) << both(kill);
  EXPECT_TRUE(contains(kill.out + kill.err, thaw)) << both(kill);
  expect_no_reset_advice(kill.out + kill.err);
  auto kill_json = run({"kill", str(holder), "--grace", "200ms", "--wait", "1s", "--json"});
  EXPECT_EQ(kill_json.exit_code, 1) << both(kill_json);
  EXPECT_TRUE(contains(kill_json.out, "frozen")) << both(kill_json);
  expect_no_reset_advice(kill_json.out);
  EXPECT_TRUE(alive(holder)) << "gpuclean never thaws on its own";
  EXPECT_TRUE(contains(slurp(group + "/freezer.state"), "FROZEN"));

  // Thawed, the SIGKILL gpuclean sent takes effect.
  ASSERT_TRUE(freezer_->thaw());
  EXPECT_TRUE(wait_gone(holder, 10s)) << "state " << proc_state(holder);
}

TEST_F(BlockedTest, V2FrozenHolderIsFrozenWithTheThawCommand) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a cgroup needs root";
  cgroups_.emplace("gpuclean-blocked");
  if (!cgroups_->why_not().empty()) GTEST_SKIP() << cgroups_->why_not();
  const std::string group = cgroups_->group("job");
  if (!std::filesystem::exists(group + "/cgroup.freeze")) GTEST_SKIP() << "no cgroup.freeze";
  v2_group_ = group;

  const pid_t holder = start("hold", held_).at(0);
  ASSERT_TRUE(write_text(group + "/cgroup.procs", str(holder)));
  ASSERT_TRUE(write_text(group + "/cgroup.freeze", "1"));
  ASSERT_TRUE(
      wait_until([&] { return contains(slurp(group + "/cgroup.events"), "frozen 1"); }, 10s))
      << slurp(group + "/cgroup.events");
  const std::string thaw = "echo 0 > " + group + "/cgroup.freeze";

  auto who = run({"who", "--json"});
  const json who_doc = parse(who);
  const json* listed = find_holder(who_doc, holder);
  ASSERT_NE(listed, nullptr) << both(who);
  EXPECT_EQ((*listed)["class"], "frozen") << listed->dump();

  auto status_json = run({"status", "--json"});
  const json status_doc = parse(status_json);
  const json* frozen = problem(status_doc, "frozen", holder);
  ASSERT_NE(frozen, nullptr) << status_doc.dump(1);
  EXPECT_TRUE(contains((*frozen)["fix"].get<std::string>(), thaw)) << frozen->dump();
  auto status = run({"status"});
  EXPECT_TRUE(contains(status.out, thaw)) << both(status);
  expect_no_reset_advice(status.out + status.err);

  auto plan = run({"kill", "--leftovers", "--dry-run", "--json"});
  EXPECT_EQ(plan.exit_code, 0) << both(plan);
  EXPECT_FALSE(planned(parse(plan), holder)) << both(plan);
  EXPECT_TRUE(contains(slurp(group + "/cgroup.events"), "frozen 1")) << "never thawed by gpuclean";

  // cgroup v2 lets a fatal signal through a freeze: a named frozen process ends.
  auto kill = run({"kill", str(holder), "--grace", "200ms", "--wait", "5s"});
  EXPECT_EQ(kill.exit_code, 0) << both(kill);
  EXPECT_TRUE(wait_gone(holder, 10s)) << "state " << proc_state(holder);
  expect_no_reset_advice(kill.out + kill.err);
}

}  // namespace
}  // namespace gpuclean::testing
