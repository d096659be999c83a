#include "procfs/device_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace gpuclean::procfs {
namespace {

namespace fs = std::filesystem;

class DeviceFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuclean-devfiles-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* name : {"dev0", "dev1", "ctl"}) std::ofstream(dir_ / name) << "";
    fs::create_symlink(dir_ / "dev1", dir_ / "alias");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(DeviceFilesTest, ExpandsCanonicalisesAndDeduplicates) {
  DeviceSelection selection;
  selection.must_match = {(dir_ / "dev*").string(), (dir_ / "alias").string()};
  auto files = expand_device_files(selection);
  ASSERT_TRUE(files.ok()) << files.error().message();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].path, fs::canonical(dir_ / "dev0").string());
  EXPECT_EQ((*files)[1].path, fs::canonical(dir_ / "dev1").string());
  EXPECT_FALSE((*files)[0].nvidia_minor.has_value());  // a regular file is no GPU
}

TEST_F(DeviceFilesTest, TakesEachFilesIdentityAndKeepsOnePathPerFile) {
  // A hard link is the same file as dev0: one entry, named by the first path in sort order.
  fs::create_hard_link(dir_ / "dev0", dir_ / "dev9");
  DeviceSelection selection;
  selection.must_match = {(dir_ / "dev*").string()};
  auto files = expand_device_files(selection);
  ASSERT_TRUE(files.ok()) << files.error().message();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].path, fs::canonical(dir_ / "dev0").string());
  ASSERT_TRUE((*files)[0].identity.has_value());
  EXPECT_EQ((*files)[0].identity->kind, FileIdentity::Kind::kOther);
  EXPECT_NE((*files)[0].identity->ino, 0u);
  EXPECT_FALSE((*files)[0].identity->same_file(*(*files)[1].identity));
}

TEST_F(DeviceFilesTest, DeviceNodesAreTheirDeviceNumber) {
  // /dev/null is 1:3 everywhere; its identity is the number, not the node's inode.
  DeviceSelection selection;
  selection.must_match = {"/dev/null"};
  auto files = expand_device_files(selection);
  ASSERT_TRUE(files.ok()) << files.error().message();
  ASSERT_EQ(files->size(), 1u);
  ASSERT_TRUE((*files)[0].identity.has_value());
  const FileIdentity& id = *(*files)[0].identity;
  EXPECT_EQ(id.kind, FileIdentity::Kind::kCharDevice);
  EXPECT_EQ(id.rdev_major, 1u);
  EXPECT_EQ(id.rdev_minor, 3u);
  FileIdentity second_node = id;
  second_node.dev = id.dev + 1;  // another node, on another file system
  second_node.ino = id.ino + 1;
  EXPECT_TRUE(id.same_file(second_node));
  FileIdentity regular = second_node;
  regular.kind = FileIdentity::Kind::kOther;
  EXPECT_FALSE(id.same_file(regular)) << "a regular file is never a device";
}

TEST_F(DeviceFilesTest, NamedPathThatDoesNotExistIsAnError) {
  DeviceSelection selection;
  selection.must_match = {(dir_ / "missing").string()};
  auto files = expand_device_files(selection);
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.error().message().find("no such file"), std::string::npos);
}

// Issue 50: a glob that matched nothing was "no such file". Failed on commit f9d1cde, which
// said "'…/missing*': no such file".
TEST_F(DeviceFilesTest, NamedGlobThatMatchesNothingSaysSo) {
  DeviceSelection selection;
  const std::string glob = (dir_ / "missing*").string();
  selection.must_match = {glob};
  auto files = expand_device_files(selection);
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.error().message(), "'" + glob + "': matched nothing");
  // Negative control: a plain path still names no such file (NamedPathThatDoesNotExist…).
}

TEST_F(DeviceFilesTest, DefaultPatternsMayMatchNothing) {
  DeviceSelection selection;
  selection.patterns = {(dir_ / "nvidia[0-9]*").string()};
  auto files = expand_device_files(selection);
  ASSERT_TRUE(files.ok());
  EXPECT_TRUE(files->empty());
}

TEST(GlobSyntax, CatchesWhatGlobSilentlyAccepts) {
  EXPECT_TRUE(glob_syntax_error("").has_value());
  EXPECT_TRUE(glob_syntax_error("/dev/nvidia[0-9").has_value());
  EXPECT_FALSE(glob_syntax_error("/dev/nvidia[0-9]*").has_value());
  EXPECT_FALSE(glob_syntax_error("/dev/[]]x").has_value());
  EXPECT_FALSE(glob_syntax_error("/dev/[!]]x").has_value());
  EXPECT_FALSE(glob_syntax_error("/dev/\\[x").has_value());
}

TEST(DefaultGlobs, AreTheSpecsNvidiaFiles) {
  const auto& globs = default_nvidia_globs();
  EXPECT_NE(std::find(globs.begin(), globs.end(), "/dev/nvidiactl"), globs.end());
  EXPECT_NE(std::find(globs.begin(), globs.end(), "/dev/nvidia-caps/*"), globs.end());
}

}  // namespace
}  // namespace gpuclean::procfs
