// Issue 48 item 9: a zombie leader (its main thread exited, a thread of it lives on) has let go
// of its memory map, so its own /proc/PID/cmdline is empty — and gpuclean showed the holder as
// `[holder_helper]` in who, status, top, explain and the recorder, the one row that most needs
// a name. Its command line is still there in every live thread's /proc/PID/task/TID/cmdline;
// gpuclean reads it from there. Real processes this test starts, each holding its own temp file
// passed with --device-glob; only they are ever signalled.
//
// Failed on the old code (seen with src/procfs/proc_fs.cpp reverted to before the fix, the
// rest of the tree as now): the zombie leader's "cmdline" was [] in who's JSON and its text row
// read "[holder_helper]".
#include <gtest/gtest.h>

#include <signal.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "command_json.h"
#include "holder_fixture.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class ZombieCmdlineTest : public HolderFixture {
 protected:
  // The helper's argv as start() builds it, with `extra` after.
  std::vector<std::string> argv_of(const std::string& mode, const std::string& file,
                                   const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> argv = {HOLDER_HELPER, mode, file, ready_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
};

TEST_F(ZombieCmdlineTest, ZombieLeaderShowsItsCommandLine) {
  const std::vector<std::string> marker = {"zombie-cmdline-marker"};
  const pid_t leader = start("zombie-leader", held_, marker).at(0);
  ASSERT_EQ(proc_state(leader), 'Z');
  ASSERT_TRUE(alive(leader)) << "a thread of it lives";
  // The seam: the kernel gives nothing for the leader itself.
  ASSERT_EQ(slurp("/proc/" + std::to_string(leader) + "/cmdline"), "");

  const CommandResult result = gpuclean({"who", "--json", "--device-glob", held_});
  EXPECT_EQ(result.exit_code, 1) << both(result);
  const json doc = parse(result);
  const json* h = find_holder(doc, leader);
  ASSERT_NE(h, nullptr) << doc.dump(1);
  EXPECT_EQ(h->at("class"), "zombie-leader") << h->dump(1);
  EXPECT_EQ(h->at("cmdline"), json(argv_of("zombie-leader", held_, marker))) << h->dump(1);

  const CommandResult text = gpuclean({"who", "--device-glob", held_});
  EXPECT_TRUE(contains(text.out, "zombie-cmdline-marker")) << both(text);
  EXPECT_FALSE(contains(text.out, "[holder_helper]")) << both(text);
}

// Negative controls: a live process's command line is its own, as before; a plain zombie (no
// live thread: nothing to read it from) is still shown by its comm alone.
TEST_F(ZombieCmdlineTest, LiveProcessAndPlainZombieAreUnchanged) {
  const std::vector<std::string> marker = {"live-marker"};
  const pid_t live = start("hold", held_, marker).at(0);
  const json doc = parse(gpuclean({"who", "--json", "--device-glob", held_}));
  const json* h = find_holder(doc, live);
  ASSERT_NE(h, nullptr) << doc.dump(1);
  EXPECT_EQ(h->at("cmdline"), json(argv_of("hold", held_, marker))) << h->dump(1);

  const std::vector<pid_t> pair = start("zombie", other_);
  ASSERT_EQ(pair.size(), 2u);
  ASSERT_EQ(::kill(pair[0], SIGUSR1), 0);  // the helper's own child
  ASSERT_TRUE(wait_until([&] { return proc_state(pair[0]) == 'Z'; }));
  const CommandResult explained =
      gpuclean({"explain", "--json", "--no-nvml", "--device-glob", held_, std::to_string(pair[0])});
  const json plain = parse(explained);
  ASSERT_TRUE(plain["process"].is_object()) << both(explained);
  EXPECT_EQ(plain["process"]["cmdline"], json::array()) << plain.dump(1);
  EXPECT_EQ(plain["process"]["comm"], "holder_helper") << plain.dump(1);
}

}  // namespace
}  // namespace gpuclean::testing
