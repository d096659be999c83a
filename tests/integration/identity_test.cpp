// A holder is found by what it holds, never by a path's text (docs/reference.md, issue 32):
// real mount namespaces, real device nodes, a real 71 MiB maps file. Each case shows first
// that the trap is set (the holder's fd link does not name the selected path, or a look-alike's
// does), then what `who` and `check` make of it. Every test failed on 644b0d0, whose scan
// compared the link text with the selected path: the bind mount and the second node were not
// found, the look-alike was, and the holder behind the 64 MiB maps cap was missed (check 0).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "holder_fixture.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;

constexpr const char* kUnshare = "/usr/bin/unshare";

class IdentityTest : public HolderFixture {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: mount namespaces and mknod";
  }
  json who_json(const std::string& selected) {
    auto result = gpuclean({"who", "--json", "--device-glob", selected});
    EXPECT_TRUE(result.exit_code == 0 || result.exit_code == 1) << result.err;
    return json::parse(result.out);
  }
  // The text of pid's descriptor links that are absolute paths.
  static std::vector<std::string> link_texts(pid_t pid) {
    std::vector<std::string> texts;
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      char target[PATH_MAX];
      const ssize_t n = ::readlink(entry.path().c_str(), target, sizeof(target));
      if (n > 0 && target[0] == '/') texts.emplace_back(target, static_cast<std::size_t>(n));
    }
    return texts;
  }
  static bool has_link(pid_t pid, const std::string& text) {
    const auto texts = link_texts(pid);
    return std::find(texts.begin(), texts.end(), text) != texts.end();
  }
  // Runs `script` (sh) in a private mount namespace; it ends by exec'ing the helper.
  pid_t start_in_mount_namespace(const std::string& script) {
    return start_argv(
               {kUnshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script})
        .at(0);
  }
};

TEST_F(IdentityTest, HolderThroughABindMountInItsOwnNamespaceIsFound) {
  const std::string canonical = std::filesystem::canonical(held_).string();
  const std::string bind_point = dir_.file("bind-point");  // an empty file on the host
  const pid_t holder =
      start_in_mount_namespace("mount --bind '" + held_ + "' '" + bind_point + "' && exec '" +
                               HOLDER_HELPER + "' hold '" + bind_point + "' '" + ready_ + "'");
  // The trap: its descriptor's link names the bind point, not the device.
  ASSERT_TRUE(has_link(holder, bind_point)) << "the holder's links do not show the bind point";
  ASSERT_FALSE(has_link(holder, canonical));

  const json doc = who_json(held_);
  const json* h = find_holder(doc, holder);
  ASSERT_NE(h, nullptr) << "missed a holder that opened the device through a bind mount\n"
                        << doc.dump(1);
  EXPECT_EQ(h->at("devices")[0]["path"], canonical);
  EXPECT_EQ(h->at("devices")[0]["opened_as"], bind_point);
  // `check` (the Epilog's and the health check's question) sees it too.
  const auto check = gpuclean({"check", "--no-nvml", "--device-glob", held_});
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  EXPECT_NE(check.out.find(std::to_string(holder)), std::string::npos) << check.out;

  // Negative control: the host's file at the bind point is another file; nobody holds it.
  EXPECT_EQ(find_holder(who_json(bind_point), holder), nullptr);
}

TEST_F(IdentityTest, HolderOfASecondNodeWithTheSameNumberIsFound) {
  // Two nodes of /dev/full's number (1:7: a device nothing here holds open for long) and one of
  // /dev/zero's (1:5).
  const std::string node_a = dir_.path() + "/node-a";
  const std::string node_b = dir_.path() + "/node-b";
  const std::string node_z = dir_.path() + "/node-z";
  ASSERT_EQ(::mknod(node_a.c_str(), S_IFCHR | 0600, makedev(1, 7)), 0);
  ASSERT_EQ(::mknod(node_b.c_str(), S_IFCHR | 0600, makedev(1, 7)), 0);
  ASSERT_EQ(::mknod(node_z.c_str(), S_IFCHR | 0600, makedev(1, 5)), 0);
  const pid_t through_b = start("hold", node_b).at(0);
  const pid_t other_device = start("hold", node_z).at(0);
  ASSERT_TRUE(has_link(through_b, node_b));

  const json doc = who_json(node_a);
  const json* h = find_holder(doc, through_b);
  ASSERT_NE(h, nullptr) << "missed a holder of a second node with the same number\n" << doc.dump(1);
  EXPECT_EQ(h->at("devices")[0]["path"], node_a);
  EXPECT_EQ(h->at("devices")[0]["opened_as"], node_b);
  EXPECT_EQ(doc["files"][0]["device_number"], "1:7");
  // Negative control: another device number is another device.
  EXPECT_EQ(find_holder(doc, other_device), nullptr);
  EXPECT_NE(find_holder(who_json(node_z), other_device), nullptr);
}

TEST_F(IdentityTest, LookAlikeAtTheDevicePathInAnotherNamespaceIsNotAHolder) {
  // The selected file sits in a directory that the other namespace covers with a tmpfs, where
  // a file of the same name is created and opened.
  const std::string dev_dir = dir_.path() + "/devdir";
  std::filesystem::create_directories(dev_dir);
  const std::string device = dev_dir + "/device";
  std::ofstream(device) << "the real one";
  const pid_t look_alike = start_in_mount_namespace(
      "mount -t tmpfs gpuclean-test '" + dev_dir + "' && echo fake > '" + device + "' && exec '" +
      HOLDER_HELPER + "' hold '" + device + "' '" + ready_ + "'");
  // The trap: its link names exactly the selected path.
  ASSERT_TRUE(has_link(look_alike, device)) << "the look-alike's link does not show the path";

  const json doc = who_json(device);
  EXPECT_EQ(find_holder(doc, look_alike), nullptr)
      << "a different file at the device's path was taken for the device\n"
      << doc.dump(1);
  const auto check = gpuclean({"check", "--no-nvml", "--device-glob", device});
  EXPECT_EQ(check.out.find(std::to_string(look_alike)), std::string::npos) << check.out;

  // Negative control: a holder of the real file is found by the same command.
  const pid_t real = start("hold", device).at(0);
  EXPECT_NE(find_holder(who_json(device), real), nullptr);
}

TEST_F(IdentityTest, MappingBehindAHugeMapsFileIsFound) {
  // 24,000 one-page mappings of a file with a ~3,000-character path before the device's own
  // mapping (its descriptor closed): a 71 MiB maps file (docs/facts.md). The old scan read at
  // most 64 MiB of it and missed the holder; check said clean.
  std::string long_dir = dir_.path();
  while (long_dir.size() < 2900) long_dir += "/" + std::string(200, 'd');
  std::filesystem::create_directories(long_dir);
  const std::string crowd = long_dir + "/crowd";
  std::ofstream(crowd) << "";
  const pid_t holder = start("map-crowd", held_, {crowd, "24000"}).at(0);
  const auto maps_size = [holder] {
    std::ifstream maps("/proc/" + std::to_string(holder) + "/maps", std::ios::binary);
    std::size_t size = 0;
    char buffer[1 << 16];
    while (maps.read(buffer, sizeof(buffer)) || maps.gcount() > 0) {
      size += static_cast<std::size_t>(maps.gcount());
    }
    return size;
  }();
  ASSERT_GT(maps_size, std::size_t{64} << 20) << "the maps file is not past the old cap";

  // Reading 71 MiB of maps takes the kernel about a second on 2 cores (each line is a path
  // walk): past the default read deadline on a loaded machine. Given the time, the scan reads
  // it all and finds the holder.
  auto whole = gpuclean({"who", "--json", "--proc-timeout", "60s", "--device-glob", held_});
  ASSERT_EQ(whole.exit_code, 1) << whole.err;
  const json doc = json::parse(whole.out);
  const json* h = find_holder(doc, holder);
  ASSERT_NE(h, nullptr) << "missed the mapping behind " << maps_size << " bytes of maps";
  EXPECT_TRUE(h->at("devices")[0]["mapped"].get<bool>());
  EXPECT_TRUE(h->at("devices")[0]["fds"].empty());
  // Within the default deadline it is dirty (read in time) or unknown (not read completely,
  // named): never clean.
  const auto check = gpuclean({"check", "--no-nvml", "--device-glob", held_});
  EXPECT_TRUE(check.exit_code == 1 || check.exit_code == 3) << check.out << check.err;
  if (check.exit_code == 3) {
    EXPECT_NE(check.err.find("could not be read completely"), std::string::npos) << check.err;
    EXPECT_NE(check.err.find(std::to_string(holder)), std::string::npos) << check.err;
  } else {
    EXPECT_NE(check.out.find(std::to_string(holder)), std::string::npos) << check.out;
  }
  // A deadline far too short for it: unknown, with the process named, never clean.
  const auto rushed =
      gpuclean({"check", "--no-nvml", "--proc-timeout", "0.01s", "--device-glob", held_});
  EXPECT_EQ(rushed.exit_code, 3) << rushed.out << rushed.err;
  EXPECT_NE(rushed.err.find(std::to_string(holder)), std::string::npos) << rushed.err;
}

}  // namespace
}  // namespace gpuclean::testing
