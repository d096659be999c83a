// `gpuclean who` against real processes this test starts, each holding a temp file passed with
// --device-glob. Every guarantee comes with a negative control that shows the test can see the
// failure it guards against.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "holder_fixture.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;

class WhoTest : public HolderFixture {
 protected:
  CommandResult who(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"who"};
    args.insert(args.end(), extra.begin(), extra.end());
    return gpuclean(args);
  }
  json who_json(const std::string& file) {
    auto result = who({"--json", "--device-glob", file});
    EXPECT_TRUE(result.exit_code == 0 || result.exit_code == 1) << result.err;
    return json::parse(result.out);
  }
};

TEST_F(WhoTest, PlainHolderIsFoundAndABystanderIsNot) {
  const pid_t holder = start("hold", held_).at(0);
  const pid_t bystander = start("hold", other_).at(0);

  auto result = who({"--json", "--device-glob", held_});
  EXPECT_EQ(result.exit_code, 1) << "exit 1 when someone holds the file";
  json doc = json::parse(result.out);
  EXPECT_EQ(doc["schema"], 1);
  EXPECT_EQ(doc["verdict"], "dirty");
  const json* h = find_holder(doc, holder);
  ASSERT_NE(h, nullptr) << result.out;
  EXPECT_EQ(h->at("devices")[0]["path"], std::filesystem::canonical(held_).string());
  EXPECT_EQ(h->at("devices")[0]["access"], "rw");
  EXPECT_EQ(h->at("class"), "active");
  EXPECT_EQ(find_holder(doc, bystander), nullptr) << "holder of another file reported";
  EXPECT_EQ(doc["holders"].size(), 1u) << result.out;

  // Negative control: the bystander *is* found when its own file is asked for.
  EXPECT_NE(find_holder(who_json(other_), bystander), nullptr);
}

TEST_F(WhoTest, NobodyHoldingExitsZero) {
  auto result = who({"--device-glob", dir_.file("unheld")});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("No process holds"), std::string::npos) << result.out;
}

TEST_F(WhoTest, ForkedHeirWhoseParentExitedIsFound) {
  const pid_t heir = start("heir", held_).at(0);
  const json* h = nullptr;
  json doc = who_json(held_);
  h = find_holder(doc, heir);
  ASSERT_NE(h, nullptr) << doc.dump();
  EXPECT_NE(h->at("ppid"), launchers_.back()) << "the heir's parent has exited";
  if (h->at("ppid") == 1) {
    EXPECT_EQ(h->at("class"), "orphan");
  }
}

TEST_F(WhoTest, ZombieLedHolderIsFoundThroughItsThreads) {
  const pid_t leader = start("zombie-leader", held_).at(0);
  ASSERT_EQ(proc_state(leader), 'Z');

  // Negative control: the leader's own fd table is empty — what fuser and lsof look at.
  const std::string fd_dir = "/proc/" + std::to_string(leader) + "/fd";
  EXPECT_TRUE(std::filesystem::is_empty(fd_dir)) << "not the Zl shape";
  if (access("/usr/bin/fuser", X_OK) == 0) {
    auto fuser = run_command({"/usr/bin/fuser", held_});
    EXPECT_EQ(fuser.out.find(std::to_string(leader)), std::string::npos)
        << "fuser sees it: the scenario does not reproduce the blind spot";
  }

  json doc = who_json(held_);
  const json* h = find_holder(doc, leader);
  ASSERT_NE(h, nullptr) << doc.dump();
  EXPECT_EQ(h->at("class"), "zombie-leader");
  EXPECT_EQ(h->at("state"), "Z");
  EXPECT_FALSE(h->at("devices")[0]["via_thread"].is_null());
  EXPECT_GE(h->at("threads").size(), 2u);

  auto text = who({"--device-glob", held_});
  EXPECT_NE(text.out.find("Zl"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("held through thread"), std::string::npos) << text.out;
}

TEST_F(WhoTest, PlainZombieHoldsNothing) {
  auto pids = start("zombie", held_);
  ASSERT_EQ(pids.size(), 2u);
  const pid_t child = pids[0];
  const pid_t parent = pids[1];

  // Negative control: while alive the child is found.
  ASSERT_NE(find_holder(who_json(held_), child), nullptr);

  ASSERT_EQ(::kill(child, SIGUSR1), 0);  // our own helper's child
  ASSERT_TRUE(wait_until([&] { return proc_state(child) == 'Z'; }));
  json doc = who_json(held_);
  EXPECT_EQ(find_holder(doc, child), nullptr) << "a plain zombie holds no files";
  EXPECT_EQ(find_holder(doc, parent), nullptr);
}

TEST_F(WhoTest, SetsidDaemonIsFound) {
  const pid_t daemon = start("daemon", held_).at(0);
  json doc = who_json(held_);
  const json* h = find_holder(doc, daemon);
  ASSERT_NE(h, nullptr) << doc.dump();
  EXPECT_NE(h->at("sid"), ::getsid(0)) << "the daemon left the test's session";
  EXPECT_NE(h->at("ppid"), launchers_.back()) << "and its launcher";
}

TEST_F(WhoTest, HolderThroughMapsOnlyIsFound) {
  const pid_t mapper = start("map", held_).at(0);
  // Negative control: no descriptor points at the file any more.
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(mapper) + "/fd")) {
    std::error_code ec;
    EXPECT_NE(std::filesystem::read_symlink(entry.path(), ec).string(),
              std::filesystem::canonical(held_).string());
  }
  const json* h = nullptr;
  json doc = who_json(held_);
  h = find_holder(doc, mapper);
  ASSERT_NE(h, nullptr) << doc.dump();
  EXPECT_TRUE(h->at("devices")[0]["mapped"].get<bool>());
  EXPECT_TRUE(h->at("devices")[0]["fds"].empty());
}

TEST_F(WhoTest, HolderInItsOwnPidNamespace) {
  if (::geteuid() != 0) GTEST_SKIP() << "unshare --pid needs root here";
  auto probe = run_command({"/usr/bin/unshare", "--pid", "--fork", "/bin/true"});
  if (probe.exit_code != 0) GTEST_SKIP() << "unshare --pid is not permitted: " << probe.err;

  const pid_t holder =
      start_argv({"/usr/bin/unshare", "--pid", "--fork", HOLDER_HELPER, "hold", held_, ready_})
          .at(0);
  json doc = who_json(held_);
  const json* h = find_holder(doc, holder);
  ASSERT_NE(h, nullptr) << doc.dump();
  ASSERT_EQ(h->at("nspid").size(), 2u) << "NSpid shows the namespace";
  EXPECT_EQ(h->at("nspid")[1], 1) << "it is PID 1 inside its namespace";
}

TEST_F(WhoTest, HostileCommandLineIsEscapedInTextAndValidInJson) {
  const std::string hostile = "\x1b]0;owned\x07\x1b[2J\xff\n";
  const pid_t holder = start("hold", held_, {hostile}).at(0);
  auto text = who({"--device-glob", held_});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos) << "raw ESC reached the terminal";
  EXPECT_NE(text.out.find("\\e]0;owned"), std::string::npos) << text.out;
  // Negative control: the raw bytes really are in the process's argv.
  std::ifstream cmdline("/proc/" + std::to_string(holder) + "/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  EXPECT_NE(raw.find('\x1b'), std::string::npos);

  json doc = who_json(held_);  // parse() would throw on invalid JSON
  ASSERT_NE(find_holder(doc, holder), nullptr);
}

TEST_F(WhoTest, UnreadableProcessesAreSummarisedInOneLine) {
  // On these sandboxed machines /proc/1/fd is unreadable even for root (docs/facts.md); as an
  // unprivileged user every other user's process is. The JSON count says which case this is.
  const auto unreadable = who_json(held_)["scan"]["unreadable"].get<std::size_t>();
  auto result = who({"--device-glob", held_});
  const auto lines = std::count(result.err.begin(), result.err.end(), '\n');
  if (unreadable == 0) {
    EXPECT_EQ(lines, 0) << result.err;
  } else {
    EXPECT_EQ(lines, 1) << "one summary line, not one per process:\n" << result.err;
    EXPECT_NE(result.err.find(std::to_string(unreadable) + " process"), std::string::npos)
        << result.err;
  }
}

TEST_F(WhoTest, ScanThreadsAgree) {
  const pid_t holder = start("hold", held_).at(0);
  const pid_t leader = start("zombie-leader", held_).at(0);
  for (const char* threads : {"1", "2", "7"}) {
    auto result = who({"--json", "--threads", threads, "--device-glob", held_});
    json doc = json::parse(result.out);
    EXPECT_NE(find_holder(doc, holder), nullptr) << threads;
    EXPECT_NE(find_holder(doc, leader), nullptr) << threads;
  }
}

TEST(WhoBadInput, UsageErrorsExitTwo) {
  auto unknown = run_command({GPUCLEAN_BINARY, "who", "--frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("frobnicate"), std::string::npos) << unknown.err;

  auto missing = run_command({GPUCLEAN_BINARY, "who", "/nonexistent/gpuclean-file"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no such file"), std::string::npos) << missing.err;

  auto bad_glob = run_command({GPUCLEAN_BINARY, "who", "--device-glob", "/tmp/[abc"});
  EXPECT_EQ(bad_glob.exit_code, 2);
  EXPECT_NE(bad_glob.err.find("unbalanced"), std::string::npos) << bad_glob.err;

  auto threads = run_command({GPUCLEAN_BINARY, "who", "--threads", "0"});
  EXPECT_EQ(threads.exit_code, 2);

  auto gpus = run_command({GPUCLEAN_BINARY, "who", "--gpus", "0"});
  EXPECT_EQ(gpus.exit_code, 2);
  // who offers no --gpus (issue 15: an option is offered only where it works).
  EXPECT_NE(gpus.err.find("unknown option '--gpus'"), std::string::npos) << gpus.err;

  auto subcommand = run_command({GPUCLEAN_BINARY, "frobnicate"});
  EXPECT_EQ(subcommand.exit_code, 2);
}

// `who --pid` (issue 38: the pytest plugin names the processes a test created instead of
// scanning the host). Only the named processes are looked at; PID@START names that process
// only; a thread's ID is not a process of its own, though /proc/TID answers with the group's
// descriptors.
TEST_F(WhoTest, APidFilterLooksAtTheNamedProcessesOnly) {
  const pid_t first = start("hold", held_).at(0);
  const pid_t second = start("hold", held_).at(0);

  // Negative control: unfiltered, both are found.
  json all = who_json(held_);
  ASSERT_NE(find_holder(all, first), nullptr) << all.dump();
  ASSERT_NE(find_holder(all, second), nullptr) << all.dump();
  EXPECT_FALSE(all.contains("pids")) << "an unfiltered scan names no PIDs";
  const std::uint64_t first_start = find_holder(all, first)->at("start_ticks");

  auto named = who({"--json", "--device-glob", held_, "--pid", std::to_string(first)});
  EXPECT_EQ(named.exit_code, 1) << named.err;
  json doc = json::parse(named.out);
  EXPECT_NE(find_holder(doc, first), nullptr) << named.out;
  EXPECT_EQ(find_holder(doc, second), nullptr) << "a holder not named was scanned";
  EXPECT_EQ(doc["pids"], json::array({first}));
  EXPECT_EQ(doc["scan"]["processes"], 1) << named.out;

  // PID@START: the right start names the holder; another start is another process.
  const std::string pid_text = std::to_string(first);
  auto right = who(
      {"--json", "--device-glob", held_, "--pid", pid_text + "@" + std::to_string(first_start)});
  EXPECT_NE(find_holder(json::parse(right.out), first), nullptr) << right.out;
  auto wrong = who({"--json", "--device-glob", held_, "--pid",
                    pid_text + "@" + std::to_string(first_start + 1)});
  EXPECT_EQ(wrong.exit_code, 0) << wrong.out;
  EXPECT_EQ(json::parse(wrong.out)["holders"].size(), 0u) << wrong.out;
  // ... and is not scanned at all (the review of 05b545f: it was scanned and dropped after,
  // so a newcomer that could not be read made the verdict unknown; processes was 1 there).
  EXPECT_EQ(json::parse(wrong.out)["scan"]["processes"], 0) << wrong.out;
  EXPECT_EQ(json::parse(wrong.out)["pids"].size(), 0u) << wrong.out;

  // Comma-separated and repeated forms name both.
  auto both =
      who({"--json", "--device-glob", held_, "--pid", pid_text + "," + std::to_string(second)});
  EXPECT_EQ(json::parse(both.out)["holders"].size(), 2u) << both.out;

  auto bad = who({"--device-glob", held_, "--pid", "nonsense"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
}

TEST_F(WhoTest, APidFilterDropsAThreadsId) {
  const pid_t leader = start("zombie-leader", held_).at(0);
  pid_t thread = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(leader) + "/task")) {
    const pid_t tid = std::stoi(entry.path().filename().string());
    if (tid != leader) thread = tid;
  }
  ASSERT_NE(thread, 0) << "the zombie-led helper has a live thread";
  // Negative control: the thread's /proc entry does show the group's descriptors.
  EXPECT_FALSE(std::filesystem::is_empty("/proc/" + std::to_string(thread) + "/fd"));

  auto by_thread = who({"--json", "--device-glob", held_, "--pid", std::to_string(thread)});
  EXPECT_EQ(by_thread.exit_code, 0) << by_thread.out;
  json doc = json::parse(by_thread.out);
  EXPECT_EQ(doc["holders"].size(), 0u) << "a thread reported as a process: " << by_thread.out;
  EXPECT_EQ(doc["pids"].size(), 0u) << by_thread.out;

  auto by_leader = who({"--json", "--device-glob", held_, "--pid", std::to_string(leader)});
  EXPECT_NE(find_holder(json::parse(by_leader.out), leader), nullptr) << by_leader.out;
}

}  // namespace
}  // namespace gpuclean::testing
