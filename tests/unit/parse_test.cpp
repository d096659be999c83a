#include "procfs/parse.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuclean::procfs {
namespace {

using namespace std::string_literals;
using namespace std::string_view_literals;

TEST(ParseStat, ReadsTheFieldsAroundComm) {
  auto stat = parse_stat(
      "4242 (python3) S 1 4242 4200 34816 4242 4194304 0 0 0 0 0 0 0 0 20 0 "
      "7 0 987654 0 0\n");
  ASSERT_TRUE(stat.ok()) << stat.error().message();
  EXPECT_EQ(stat->pid, 4242);
  EXPECT_EQ(stat->comm, "python3");
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->ppid, 1);
  EXPECT_EQ(stat->pgid, 4242);
  EXPECT_EQ(stat->sid, 4200);
  EXPECT_EQ(stat->num_threads, 7u);
  EXPECT_EQ(stat->start_ticks, 987654u);
}

TEST(ParseStat, CommEndsAtTheLastParenthesis) {
  // A process may name itself "x) R 1 (" to fool a parser that stops at the first ')'.
  auto stat = parse_stat("77 (x) R 1 (y) Z 5 77 77 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0");
  ASSERT_TRUE(stat.ok()) << stat.error().message();
  EXPECT_EQ(stat->comm, "x) R 1 (y");
  EXPECT_EQ(stat->state, 'Z');
  EXPECT_EQ(stat->ppid, 5);
  EXPECT_EQ(stat->start_ticks, 42u);
}

TEST(ParseStat, CommWithNewlineAndSpaces) {
  auto stat = parse_stat("9 (a\nb c) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0");
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->comm, "a\nb c");
}

TEST(ParseStat, KernelThreadFlag) {
  auto stat = parse_stat("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0");
  ASSERT_TRUE(stat.ok());
  EXPECT_NE(stat->flags & kPfKthread, 0u);
}

TEST(ParseStat, RejectsTruncatedAndMalformed) {
  EXPECT_FALSE(parse_stat("").ok());
  EXPECT_FALSE(parse_stat("12 (cut").ok());          // no closing ')'
  EXPECT_FALSE(parse_stat("12 (cut) S 1 12").ok());  // fields missing
  EXPECT_FALSE(parse_stat("x (a) S 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0").ok());
  EXPECT_FALSE(parse_stat("12 (a) SS 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0").ok());
  EXPECT_FALSE(parse_stat("12 (a) S 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 3z 0 0").ok());
  EXPECT_FALSE(parse_stat(") 12 (").ok());
}

TEST(ParseStatus, EffectiveUidAndNestedNamespacePids) {
  auto status = parse_status(
      "Name:\tpython3\nTgid:\t4240\nUid:\t1000\t1001\t1000\t1000\nNSpid:\t4242\t7\t1\n");
  EXPECT_EQ(status.tgid, std::optional<Pid>(4240));
  ASSERT_TRUE(status.euid.has_value());
  EXPECT_EQ(*status.euid, 1001u);
  EXPECT_EQ(status.nspid, (std::vector<Pid>{4242, 7, 1}));
}

TEST(ParseStatus, MissingFieldsStayEmpty) {
  auto status = parse_status("Name:\tx\nUid:\tgarbage\n");
  EXPECT_FALSE(status.euid.has_value());
  EXPECT_FALSE(status.tgid.has_value());
  EXPECT_TRUE(status.nspid.empty());
  EXPECT_FALSE(parse_status("").euid.has_value());
}

TEST(ParseCmdline, SplitsOnNulAndKeepsEmptyArguments) {
  EXPECT_EQ(parse_cmdline("python3\0-c\0\0x\0"sv),
            (std::vector<std::string>{"python3", "-c", "", "x"}));
  EXPECT_TRUE(parse_cmdline("").empty());
  // setproctitle-style: one string with spaces, no NULs.
  EXPECT_EQ(parse_cmdline("sglang::scheduler TP0"),
            (std::vector<std::string>{"sglang::scheduler TP0"}));
}

TEST(ParseCmdline, KeepsNonUtf8BytesAndHugeArguments) {
  const std::string bytes = "\xff\xfe\x1b[31m"s;
  EXPECT_EQ(parse_cmdline(bytes + "\0"s), (std::vector<std::string>{bytes}));
  const std::string huge(256 * 1024, 'a');
  auto argv = parse_cmdline("x\0"s + huge + "\0"s);
  ASSERT_EQ(argv.size(), 2u);
  EXPECT_EQ(argv[1].size(), huge.size());
}

TEST(ParseCgroup, PicksTheUnifiedHierarchyLine) {
  EXPECT_EQ(parse_cgroup_v2("4:memory:/a\n0::/system.slice/x.service\n"),
            std::optional<std::string>("/system.slice/x.service"));
  EXPECT_FALSE(parse_cgroup_v2("4:memory:/a\n").has_value());
}

TEST(ParseMapsLine, ReadsDeviceInodeAndPathsWithSpaces) {
  auto gpu =
      parse_maps_line("7f00-7f01 rw-s 00000000 00:05 415                        /dev/nvidia0");
  ASSERT_TRUE(gpu.has_value());
  EXPECT_EQ(gpu->range, "7f00-7f01");
  EXPECT_EQ(gpu->dev_major, 0u);
  EXPECT_EQ(gpu->dev_minor, 5u);
  EXPECT_EQ(gpu->inode, 415u);
  EXPECT_EQ(gpu->path, "/dev/nvidia0");
  auto spaced = parse_maps_line("7f00-7f01 rw-s 00000000 fd:1a 9 /opt/my data/f (deleted)\n");
  ASSERT_TRUE(spaced.has_value());
  EXPECT_EQ(spaced->dev_major, 0xfdu);
  EXPECT_EQ(spaced->dev_minor, 0x1au);
  EXPECT_EQ(spaced->path, "/opt/my data/f (deleted)");
  // Anonymous and pseudo paths: inode 0, no path.
  auto stack = parse_maps_line("7ffd-7ffe rw-p 00000000 00:00 0  [stack]");
  ASSERT_TRUE(stack.has_value());
  EXPECT_EQ(stack->inode, 0u);
  EXPECT_EQ(stack->path, "");
  EXPECT_EQ(parse_maps_line("7ffd-7ffe rw-p 00000000 00:00 0")->path, "");
}

TEST(ParseMapsLine, RejectsWhatIsNotAMapsLine) {
  EXPECT_FALSE(parse_maps_line("").has_value());
  EXPECT_FALSE(parse_maps_line("7f00-7f01 rw-s 00000000").has_value());
  EXPECT_FALSE(parse_maps_line("7f00-7f01 rw-s 00000000 0005 415 /x").has_value());
  EXPECT_FALSE(parse_maps_line("7f00-7f01 rw-s 00000000 zz:05 415 /x").has_value());
  EXPECT_FALSE(parse_maps_line("7f00 rw-s 00000000 00:05 415 /x").has_value());
  EXPECT_FALSE(parse_maps_line("7f00-7f01 rw-s 00000000 00:05 -1 /x").has_value());
}

TEST(MapFilesName, DropsTheZeroPaddingMapsPrints) {
  EXPECT_EQ(map_files_name("7f12a000-7f12b000"), "7f12a000-7f12b000");
  EXPECT_EQ(map_files_name("0000a000-0000b000"), "a000-b000");
  EXPECT_EQ(map_files_name("00000000-00001000"), "0-1000");
}

TEST(SplitDeleted, RecognisesTheKernelSuffix) {
  auto link = split_deleted("/dev/nvidia0 (deleted)");
  EXPECT_EQ(link.path, "/dev/nvidia0");
  EXPECT_TRUE(link.deleted);
  EXPECT_FALSE(split_deleted("/dev/nvidia0").deleted);
  EXPECT_EQ(split_deleted(" (deleted)").path, " (deleted)");  // nothing before the suffix
}

TEST(ParseFdinfo, FlagsAreOctal) {
  EXPECT_EQ(parse_fdinfo_flags("pos:\t0\nflags:\t02100002\nmnt_id:\t25\n"), 02100002u);
  EXPECT_FALSE(parse_fdinfo_flags("pos:\t0\n").has_value());
  EXPECT_FALSE(parse_fdinfo_flags("flags:\t9\n").has_value());  // not octal
}

TEST(ParseBtime, FindsTheLine) {
  EXPECT_EQ(parse_btime("cpu 1 2\nbtime 1764500000\n"), 1764500000);
  EXPECT_FALSE(parse_btime("cpu 1 2\n").has_value());
}

}  // namespace
}  // namespace gpuclean::procfs
