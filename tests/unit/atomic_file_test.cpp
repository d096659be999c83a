// The one atomic-file helper (`run --record`, `snapshot -o`, `metrics --textfile`): whole
// files or none, the old file intact on any failure, and no planted link ever followed.
#include "core/atomic_file.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpuclean {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void spit(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

bool is_symlink(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

bool is_regular(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpuclean-atomic-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    target_ = dir_ + "/metrics.prom";
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Names in the directory (a leftover temp file shows up here).
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string dir_;
  std::string target_;
};

TEST_F(AtomicFileTest, ReplacesTheOldFileWithTheWholeNewOne) {
  spit(target_, "old\n");
  ASSERT_TRUE(write_file_atomically(target_, "new contents\n").ok());
  EXPECT_EQ(slurp(target_), "new contents\n");
  EXPECT_EQ(entries(), std::vector<std::string>{"metrics.prom"}) << "no temp file left";
  // Relative paths: the directory is the current one.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  EXPECT_TRUE(write_file_atomically("metrics.prom", "relative\n").ok());
  fs::current_path(cwd);
  EXPECT_EQ(slurp(target_), "relative\n");
}

TEST_F(AtomicFileTest, ShortAndInterruptedWritesAreRetriedUntilEveryByteIsWritten) {
  int calls = 0;
  AtomicFileHooks hooks;
  hooks.write = [&calls](int fd, const void* data, std::size_t size) -> ssize_t {
    if (++calls % 2 == 0) {
      errno = EINTR;
      return -1;
    }
    return ::write(fd, data, std::min<std::size_t>(size, 3));  // at most 3 bytes a call
  };
  auto file = AtomicFile::create(target_, 0644, hooks);
  ASSERT_TRUE(file.ok()) << file.error().message();
  ASSERT_TRUE(file->commit("0123456789abcdef").ok());
  EXPECT_EQ(slurp(target_), "0123456789abcdef");
  EXPECT_GT(calls, 10);
}

TEST_F(AtomicFileTest, AFailingWriteLeavesTheOldFileIntactAndNoTempFile) {
  spit(target_, "old\n");
  AtomicFileHooks hooks;
  bool wrote_some = false;
  hooks.write = [&wrote_some](int fd, const void* data, std::size_t size) -> ssize_t {
    if (!wrote_some) {
      wrote_some = true;
      return ::write(fd, data, std::min<std::size_t>(size, 5));
    }
    errno = ENOSPC;  // the disk filled up halfway
    return -1;
  };
  auto file = AtomicFile::create(target_, 0644, hooks);
  ASSERT_TRUE(file.ok());
  const std::string temp = file->temp_path();
  EXPECT_TRUE(is_regular(temp)) << temp;
  auto committed = file->commit("a text longer than five bytes\n");
  ASSERT_FALSE(committed.ok());
  EXPECT_EQ(committed.error().errnum, ENOSPC);
  EXPECT_NE(committed.error().message().find("No space left on device"), std::string::npos)
      << committed.error().message();
  EXPECT_EQ(slurp(target_), "old\n");
  EXPECT_EQ(entries(), std::vector<std::string>{"metrics.prom"}) << "the temp file is removed";

  // Negative control: the check above sees a damaged file. Writing in place (open with
  // O_TRUNC, as a plain ofstream does) and failing halfway leaves half a file.
  {
    std::ofstream in_place(target_, std::ios::binary | std::ios::trunc);
    in_place << "a te";
  }
  EXPECT_NE(slurp(target_), "old\n");
}

TEST_F(AtomicFileTest, AWriteThatWritesNothingIsAnErrorNotALoop) {
  AtomicFileHooks hooks;
  hooks.write = [](int, const void*, std::size_t) -> ssize_t { return 0; };
  auto file = AtomicFile::create(target_, 0644, hooks);
  ASSERT_TRUE(file.ok());
  auto committed = file->commit("x");
  ASSERT_FALSE(committed.ok());
  EXPECT_EQ(committed.error().errnum, EIO);
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, AnUncommittedFileIsRemovedAndABadDirectoryFailsAtCreate) {
  spit(target_, "old\n");
  {
    auto file = AtomicFile::create(target_);
    ASSERT_TRUE(file.ok());
    EXPECT_EQ(entries().size(), 2u) << "target and temp file";
  }  // e.g. the run failed before it had a record to write
  EXPECT_EQ(entries(), std::vector<std::string>{"metrics.prom"});
  EXPECT_EQ(slurp(target_), "old\n");
  auto missing = AtomicFile::create(dir_ + "/no-such-dir/run.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errnum, ENOENT);
  auto directory = AtomicFile::create(dir_ + "/");
  EXPECT_FALSE(directory.ok());
}

// As root into a shared textfile directory (sticky, world-writable): another user plants a
// symlink at the target's name, pointing at a file only root may write.
TEST_F(AtomicFileTest, ASymlinkPlantedAtTheTargetIsReplacedNeverFollowed) {
  ASSERT_EQ(::chmod(dir_.c_str(), 01777), 0);
  const std::string victim = dir_ + "-victim";
  spit(victim, "precious\n");
  ASSERT_EQ(::symlink(victim.c_str(), target_.c_str()), 0);
  if (::geteuid() == 0) (void)::lchown(target_.c_str(), 65534, 65534);  // planted by nobody

  ASSERT_TRUE(write_file_atomically(target_, "gpuclean_up 1\n").ok());
  EXPECT_EQ(slurp(victim), "precious\n") << "the write went through the planted link";
  EXPECT_TRUE(is_regular(target_)) << "the link is replaced by a regular file";
  EXPECT_EQ(slurp(target_), "gpuclean_up 1\n");

  // Negative control: a writer that opens the target's name (ofstream) writes the victim.
  const std::string planted = dir_ + "/other.prom";
  ASSERT_EQ(::symlink(victim.c_str(), planted.c_str()), 0);
  std::ofstream(planted) << "overwritten\n";
  EXPECT_EQ(slurp(victim), "overwritten\n");
  fs::remove(victim);
}

TEST_F(AtomicFileTest, ASymlinkPlantedAtAGuessableTempNameIsNotFollowed) {
  ASSERT_EQ(::chmod(dir_.c_str(), 01777), 0);
  const std::string victim = dir_ + "-victim";
  spit(victim, "precious\n");
  // The names gpuclean's writers used before (PATH.tmp.PID, PATH.tmp-PID) and one the
  // attacker guessed right: the first name the helper tries.
  const std::string pid = std::to_string(::getpid());
  const std::vector<std::string> planted = {target_ + ".tmp." + pid, target_ + ".tmp-" + pid,
                                            dir_ + "/.guessed.tmp"};
  for (const std::string& link : planted) ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  int names = 0;
  AtomicFileHooks hooks;
  hooks.temp_name = [&names] { return ++names == 1 ? ".guessed.tmp" : ".fresh.tmp"; };

  auto file = AtomicFile::create(target_, 0644, hooks);
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(names, 2) << "the taken name is skipped (O_EXCL), a fresh one used";
  ASSERT_TRUE(file->commit("gpuclean_up 1\n").ok());
  EXPECT_EQ(slurp(victim), "precious\n");
  EXPECT_EQ(slurp(target_), "gpuclean_up 1\n");
  for (const std::string& link : planted) EXPECT_TRUE(is_symlink(link)) << link;

  // Negative control: the open the metrics writer used (O_CREAT|O_TRUNC, no O_EXCL or
  // O_NOFOLLOW) on a planted name writes the victim.
  const int fd = ::open(planted[1].c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "x\n", 2), 2);
  ::close(fd);
  EXPECT_EQ(slurp(victim), "x\n");
  fs::remove(victim);
}

// A real full filesystem: a 64 KiB tmpfs in a mount namespace of its own (root only).
TEST_F(AtomicFileTest, AFullFilesystemLeavesTheOldFileIntact) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  constexpr int kSkip = 77;
  const std::string mount_point = dir_;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(kSkip);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(kSkip);
    if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=64k") != 0) ::_exit(kSkip);
    const std::string target = mount_point + "/run.json";
    if (!write_file_atomically(target, "old\n").ok()) ::_exit(10);
    auto full = write_file_atomically(target, std::string(1 << 20, 'x'));
    if (full.ok()) ::_exit(11);
    if (full.error().errnum != ENOSPC) ::_exit(12);
    if (slurp(target) != "old\n") ::_exit(13);
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(mount_point)) ++files;
    if (files != 1) ::_exit(14);
    // Negative control: writing in place on the full filesystem leaves a damaged file.
    { std::ofstream(target, std::ios::trunc) << std::string(1 << 20, 'x'); }
    if (slurp(target) == "old\n") ::_exit(15);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kSkip) GTEST_SKIP() << "cannot mount a tmpfs here";
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10 setup, 11 no error, 12 not ENOSPC, 13 old file damaged, 14 temp file left, "
         "15 negative control saw nothing";
}

// Issue 21 item 1: the directory the file goes into. A link at the directory's name is not
// followed, and a directory others can write (not sticky) is refused: they could swap the file
// between the write and the rename. Failed before the fix: create() succeeded in both.
TEST_F(AtomicFileTest, RefusesALinkedDirectoryAndOneOthersCanWriteUnlessSticky) {
  const std::string real = dir_ + "/real";
  fs::create_directory(real);
  ::chmod(real.c_str(), 0755);
  const std::string link = dir_ + "/link";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  auto through_link = AtomicFile::create(link + "/out.json");
  ASSERT_FALSE(through_link.ok());
  EXPECT_NE(through_link.error().message().find("is a symbolic link"), std::string::npos)
      << through_link.error().message();
  EXPECT_TRUE(fs::is_empty(real));

  for (unsigned mode : {0775u, 0757u, 0777u}) {
    ::chmod(real.c_str(), mode);
    auto shared = AtomicFile::create(real + "/out.json");
    ASSERT_FALSE(shared.ok()) << std::oct << mode;
    EXPECT_NE(shared.error().message().find("writable by other users and not sticky"),
              std::string::npos)
        << shared.error().message();
  }
  // Negative controls: sticky (a textfile directory shared the safe way), and private.
  for (unsigned mode : {01777u, 0755u}) {
    ::chmod(real.c_str(), mode);
    EXPECT_TRUE(write_file_atomically(real + "/out.json", "x\n").ok()) << std::oct << mode;
  }
}

}  // namespace
}  // namespace gpuclean
