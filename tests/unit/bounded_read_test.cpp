// Issue 51: the one bounded reader (core/bounded_read.h) and its callers' choices at the cap.
// A regular file, a /proc file that says st_size 0, a pipe that gives its data in pieces, a
// read interrupted by a signal; a file at, under and over the cap; and the cap never allocated.
#include "core/bounded_read.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/input_file.h"
#include "core/unique_fd.h"
#include "procfs/proc_fs.h"

namespace gpuclean {
namespace {

using namespace std::chrono_literals;

// `size` bytes that are not all alike, so that a piece read twice or out of order shows.
std::string pattern(std::size_t size) {
  std::string text(size, '\0');
  for (std::size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + (i * 7 + i / 26) % 26);
  return text;
}

class BoundedReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = (std::filesystem::temp_directory_path() / "bounded-read-XXXXXX").string();
    ASSERT_NE(::mkdtemp(dir.data()), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string file(const std::string& text) {
    const std::string path = dir_ + "/file-" + std::to_string(files_++);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  static UniqueFd open_read(const std::string& path) {
    return UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }

  std::string dir_;
  int files_ = 0;
};

TEST_F(BoundedReadTest, ReadsARegularFileWhole) {
  const std::string text = pattern(100'000);  // past the first guess of a file of unknown size
  const UniqueFd fd = open_read(file(text));
  std::string out = "left over from a previous read";
  ASSERT_TRUE(read_bounded(fd.get(), out, 1 << 20, PastCap::kRefuse).ok());
  EXPECT_EQ(out, text);
}

TEST_F(BoundedReadTest, OverTheCapIsRefusedOrCutAsTheCallerChose) {
  const std::string text = pattern(5000);
  const std::string path = file(text);
  std::string out;
  const Status refused = read_bounded(open_read(path).get(), out, 4999, PastCap::kRefuse);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().errnum, EFBIG);
  EXPECT_EQ(out, "");
  ASSERT_TRUE(read_bounded(open_read(path).get(), out, 4999, PastCap::kCut).ok());
  EXPECT_EQ(out, text.substr(0, 4999));
}

TEST_F(BoundedReadTest, AFileExactlyAtTheCapIsWhole) {
  const std::string text = pattern(4096);
  const std::string path = file(text);
  std::string out;
  ASSERT_TRUE(read_bounded(open_read(path).get(), out, 4096, PastCap::kRefuse).ok());
  EXPECT_EQ(out, text);
  ASSERT_TRUE(read_bounded(open_read(path).get(), out, 4096, PastCap::kCut).ok());
  EXPECT_EQ(out, text);
  ASSERT_TRUE(read_bounded(open_read(file("")).get(), out, 0, PastCap::kRefuse).ok());
  EXPECT_EQ(out, "");
}

// The cap is a limit, not an allocation (issue 51: `plot` of a 1.5 KB record zero-filled its
// 256 MiB cap).
TEST_F(BoundedReadTest, TheCapIsNotAllocated) {
  std::string out;
  ASSERT_TRUE(read_bounded(open_read(file(pattern(1500))).get(), out, std::size_t{1} << 30,
                           PastCap::kRefuse)
                  .ok());
  EXPECT_EQ(out.size(), 1500u);
  EXPECT_LT(out.capacity(), std::size_t{64} << 10);
}

// /proc says st_size 0 for what it generates: only the end of the data ends the read.
TEST_F(BoundedReadTest, ReadsAProcFileWhole) {
  const UniqueFd fd(::open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  struct stat st {};
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  ASSERT_EQ(st.st_size, 0) << "the case under test: a size that says nothing";
  std::string out;
  ASSERT_TRUE(read_bounded(fd.get(), out, 1 << 20, PastCap::kRefuse).ok());
  EXPECT_EQ(out.rfind("Name:", 0), 0u) << out;  // its first line …
  EXPECT_NE(out.find("\nnonvoluntary_ctxt_switches:"), std::string::npos) << out;  // … its last
  EXPECT_EQ(out.back(), '\n');
}

// A pipe has no size, and gives what was written so far: the reader keeps reading (and growing)
// until the writer closes it.
TEST_F(BoundedReadTest, ReadsAPipeWrittenInPiecesWhole) {
  int ends[2];
  ASSERT_EQ(::pipe2(ends, O_CLOEXEC), 0);
  UniqueFd reader(ends[0]);
  const std::string text = pattern(3 * 7000);
  std::thread writer([&text, fd = UniqueFd(ends[1])] {
    for (std::size_t at = 0; at < text.size(); at += 7000) {
      EXPECT_EQ(::write(fd.get(), text.data() + at, 7000), 7000);
      std::this_thread::sleep_for(20ms);
    }
  });
  std::string out;
  const Status result = read_bounded(reader.get(), out, 1 << 20, PastCap::kRefuse);
  writer.join();
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(out, text);
}

std::atomic<int> interrupts{0};
void count_interrupt(int /*signal*/) {
  interrupts.fetch_add(1);
}

// A signal whose handler does not restart system calls makes a blocked read fail with EINTR:
// read again, not an error.
TEST_F(BoundedReadTest, AnInterruptedReadIsRetried) {
  struct sigaction action {};
  struct sigaction before {};
  action.sa_handler = count_interrupt;  // no SA_RESTART: the read returns EINTR
  ASSERT_EQ(::sigaction(SIGUSR1, &action, &before), 0);
  int ends[2];
  ASSERT_EQ(::pipe2(ends, O_CLOEXEC), 0);
  const UniqueFd read_end(ends[0]);  // open until the end: a failed read must not make a SIGPIPE
  UniqueFd writer(ends[1]);
  std::string out;
  Status result = Ok{};
  std::thread reader([&out, &result, &read_end] {
    result = read_bounded(read_end.get(), out, 1 << 20, PastCap::kRefuse);
  });
  std::this_thread::sleep_for(100ms);  // the reader waits in read(2) on the empty pipe
  interrupts = 0;
  EXPECT_EQ(::pthread_kill(reader.native_handle(), SIGUSR1), 0);  // EXPECT: the reader is joined
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(::write(writer.get(), "after the signal", 16), 16);
  writer.reset();
  reader.join();
  ::sigaction(SIGUSR1, &before, nullptr);
  EXPECT_EQ(interrupts.load(), 1);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(out, "after the signal");
}

// The callers keep what they did at the cap: /proc and /sys reads are cut (an environ read asks
// for one byte more to know), an input file over its limit is refused with its size named.
TEST_F(BoundedReadTest, ProcReadsAreCutInputFilesRefused) {
  const std::string text = pattern(3000);
  const std::string path = file(text);
  std::string out;
  ASSERT_TRUE(procfs::read_file_at(AT_FDCWD, path.c_str(), out, 1000));
  EXPECT_EQ(out, text.substr(0, 1000));
  const Result<std::string> value = procfs::read_file_at(AT_FDCWD, path, 1000);
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, text.substr(0, 1000));
  const Result<std::string> missing = procfs::read_file_at(AT_FDCWD, dir_ + "/absent", 1000);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(), "read " + dir_ + "/absent: No such file or directory");

  const Result<std::string> whole = read_input_file(path, 3000);
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  EXPECT_EQ(*whole, text);
  const Result<std::string> refused = read_input_file(file(pattern(3u << 20)), 2u << 20);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find(" is larger than 2 MiB"), std::string::npos);
}

}  // namespace
}  // namespace gpuclean
