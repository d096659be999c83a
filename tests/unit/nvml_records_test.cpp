// NVML process records on raw byte buffers, as a driver writes them: 24-byte records (580),
// 32-byte records (535.43–535.86), 16-byte records, a wrong stride, and garbage.
#include "nvml/process_records.h"

#include <gtest/gtest.h>

#include <cstring>

namespace gpuclean::nvml {
namespace {

constexpr Bytes kGiB = 1ull << 30;
constexpr Bytes kTotal = 140 * kGiB;
constexpr std::uint64_t kNotAvailable = ~0ULL;
constexpr std::uint32_t kNoInstance = 0xFFFFFFFFu;

struct Record {
  std::uint32_t pid;
  std::uint64_t used;
  std::uint32_t gi = kNoInstance;
  std::uint32_t ci = kNoInstance;
};

// The buffer a list function leaves: `records` at `stride` bytes each (the padding after the
// pid zeroed, as a C struct initialiser leaves it), the rest of room for `slots` records still
// holding kFillByte, as fetch_process_list prepares it.
std::vector<unsigned char> written(const std::vector<Record>& records, std::size_t stride,
                                   std::size_t slots = 16) {
  std::vector<unsigned char> bytes(slots * kBytesPerRecordSlot, kFillByte);
  for (std::size_t i = 0; i < records.size(); ++i) {
    unsigned char* r = bytes.data() + i * stride;
    std::memset(r, 0, stride);
    std::memcpy(r, &records[i].pid, 4);
    std::memcpy(r + 8, &records[i].used, 8);
    if (stride >= 24) {
      std::memcpy(r + 16, &records[i].gi, 4);
      std::memcpy(r + 20, &records[i].ci, 4);
    }
    // stride 32: usedGpuCcProtectedMemory stays 0 (no confidential computing)
  }
  return bytes;
}

// The candidates of a 580-shaped library, and of a 535.43–535.86-shaped one.
StrideCandidates modern() {
  return {{24, 32}, {16}};
}
StrideCandidates r535() {
  return {{32, 24}, {16}};
}
constexpr RecordLimits kLimits{4194304, kTotal};

Result<DecodedList> decode(const std::vector<unsigned char>& bytes, std::size_t count,
                           const StrideCandidates& strides, RecordLimits limits = kLimits) {
  return decode_process_records(bytes, count, strides, limits, GpuProcess::Kind::kCompute);
}

void expect_list(const Result<DecodedList>& decoded, std::size_t stride,
                 const std::vector<std::pair<Pid, std::optional<Bytes>>>& expected) {
  ASSERT_TRUE(decoded.ok()) << decoded.error().context;
  EXPECT_EQ(decoded->stride, stride);
  ASSERT_EQ(decoded->processes.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(decoded->processes[i].pid, expected[i].first) << "record " << i;
    EXPECT_EQ(decoded->processes[i].used_memory, expected[i].second) << "record " << i;
    EXPECT_EQ(decoded->processes[i].kind, GpuProcess::Kind::kCompute);
  }
}

TEST(NvmlRecordsTest, CandidatesFollowTheExportedSymbols) {
  EXPECT_EQ(candidate_strides({ListSymbols::kV3, true, false}).primary,
            (std::vector<std::size_t>{32, 24}))
      << "535.43–535.86: ConfComputeMemSizeInfo without RunningProcessDetailList";
  EXPECT_EQ(candidate_strides({ListSymbols::kV3, true, true}).primary,
            (std::vector<std::size_t>{24, 32}))
      << "580 has both";
  EXPECT_EQ(candidate_strides({ListSymbols::kV3, false, false}).primary,
            (std::vector<std::size_t>{24, 32}))
      << "510–530 have neither";
  EXPECT_EQ(candidate_strides({ListSymbols::kV3, false, false}).fallback,
            (std::vector<std::size_t>{16}));
  EXPECT_EQ(candidate_strides({ListSymbols::kV2, true, false}).primary,
            (std::vector<std::size_t>{24}));
  EXPECT_TRUE(candidate_strides({ListSymbols::kV2, true, false}).fallback.empty());
  EXPECT_EQ(candidate_strides({ListSymbols::kV1, false, false}).primary,
            (std::vector<std::size_t>{16}));
}

TEST(NvmlRecordsTest, TwentyFourByteRecordsDecode) {
  const auto bytes = written({{4242, 8 * kGiB}, {4243, 2 * kGiB}, {4244, 512ull << 20}}, 24);
  expect_list(decode(bytes, 3, modern()), 24,
              {{4242, 8 * kGiB}, {4243, 2 * kGiB}, {4244, 512ull << 20}});
  // The 32-byte reading runs into bytes the driver never wrote: refused, not a second answer.
  EXPECT_TRUE(implausible_at(bytes, 3, 32, kLimits).has_value());
  // A 535-shaped library that still writes 24-byte records: the check finds the stride.
  expect_list(decode(bytes, 3, r535()), 24,
              {{4242, 8 * kGiB}, {4243, 2 * kGiB}, {4244, 512ull << 20}});
}

TEST(NvmlRecordsTest, ThirtyTwoByteRecordsDecode) {
  const auto bytes = written({{4242, 8 * kGiB}, {4243, 8 * kGiB}}, 32);
  expect_list(decode(bytes, 2, r535()), 32, {{4242, 8 * kGiB}, {4243, 8 * kGiB}});
  // The bug this guards against: read as 24 bytes, record 2 starts inside record 1's
  // usedGpuCcProtectedMemory (pid 0) and its memory is the real record 2's PID.
  auto wrong = implausible_at(bytes, 2, 24, kLimits);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_EQ(*wrong, "record 2: pid 0");
  // Symbols that suggest 24 bytes (a library that lies): the data decides.
  expect_list(decode(bytes, 2, modern()), 32, {{4242, 8 * kGiB}, {4243, 8 * kGiB}});
}

TEST(NvmlRecordsTest, SixteenByteRecordsOnlyAsTheFallback) {
  const auto bytes = written({{4242, 8 * kGiB}, {4243, 8 * kGiB}}, 16);
  expect_list(decode(bytes, 2, modern()), 16, {{4242, 8 * kGiB}, {4243, 8 * kGiB}});
  expect_list(decode(bytes, 2, {{16}, {}}), 16, {{4242, 8 * kGiB}, {4243, 8 * kGiB}});
  // The _v2 symbols are not known to use anything but 24 bytes: no fallback, refused.
  EXPECT_FALSE(decode(bytes, 2, {{24}, {}}).ok());
}

TEST(NvmlRecordsTest, OneRecordIsTheSameListAtEveryStride) {
  // 32 bytes written: 24 and 32 both decode the same one process; the symbols' choice stays.
  const auto wide = written({{4242, 8 * kGiB}}, 32);
  expect_list(decode(wide, 1, modern()), 24, {{4242, 8 * kGiB}});
  expect_list(decode(wide, 1, r535()), 32, {{4242, 8 * kGiB}});
  // 24 bytes written: a 32-byte reading takes its last field from the unwritten fill.
  const auto narrow = written({{4242, 8 * kGiB}}, 24);
  expect_list(decode(narrow, 1, r535()), 24, {{4242, 8 * kGiB}});
}

TEST(NvmlRecordsTest, EmptyListIsEmpty) {
  const auto bytes = written({}, 24);
  expect_list(decode(bytes, 0, modern()), 24, {});
}

TEST(NvmlRecordsTest, NotAvailableMemoryIsAbsentNotHuge) {
  const auto bytes = written({{4242, kNotAvailable}, {4243, 3 * kGiB}}, 24);
  expect_list(decode(bytes, 2, modern()), 24, {{4242, std::nullopt}, {4243, 3 * kGiB}});
}

TEST(NvmlRecordsTest, MigInstanceIdsArePlausible) {
  // MIG: small instance IDs in place of 0xFFFFFFFF; the 16-byte fallback would read the first
  // record's gpuInstanceId as a PID, but it is not tried while 24 decodes.
  const auto bytes = written({{4242, 8 * kGiB, 1, 0}, {4243, 8 * kGiB, 2, 0}}, 24);
  expect_list(decode(bytes, 2, modern()), 24, {{4242, 8 * kGiB}, {4243, 8 * kGiB}});
}

TEST(NvmlRecordsTest, EachRuleRejectsARecord) {
  // Negative controls: each check alone refuses an otherwise plausible list.
  EXPECT_EQ(implausible_at(written({{0, kGiB}}, 24), 1, 24, kLimits), "record 1: pid 0");
  EXPECT_EQ(implausible_at(written({{4194304, kGiB}}, 24), 1, 24, kLimits),
            "record 1: pid 4194304");
  EXPECT_EQ(implausible_at(written({{4242, kGiB}}, 24), 1, 24, {4096, kTotal}),
            "record 1: pid 4242")
      << "pid_max comes from the caller";
  EXPECT_TRUE(implausible_at(written({{4242, kTotal + 1}}, 24), 1, 24, kLimits).has_value());
  EXPECT_FALSE(implausible_at(written({{4242, kTotal}}, 24), 1, 24, kLimits).has_value());
  EXPECT_TRUE(implausible_at(written({{4242, 8 * kGiB, 5000, 0}}, 24), 1, 24, kLimits).has_value());
  EXPECT_TRUE(implausible_at(written({{4242, 100 * kGiB}, {4243, 100 * kGiB}}, 24), 2, 24, kLimits)
                  .has_value())
      << "together more than the GPU has";
  EXPECT_TRUE(implausible_at(written({{4242, kGiB}}, 24, 1), 2, 32, kLimits).has_value())
      << "more records than the buffer holds";
  // memory_total 0 (unknown): memory is not checked, PIDs still are.
  EXPECT_FALSE(implausible_at(written({{4242, kTotal * 2}}, 24), 1, 24, {4194304, 0}));
}

TEST(NvmlRecordsTest, GarbageIsRefusedWithTheReasons) {
  std::vector<unsigned char> bytes(16 * kBytesPerRecordSlot, kFillByte);
  std::uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (std::size_t i = 0; i < std::size_t{3} * 32; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    bytes[i] = static_cast<unsigned char>(x >> 24);
  }
  auto decoded = decode(bytes, 3, modern());
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().context.find("no record stride of 24, 32, 16 bytes decodes plausibly"),
            std::string::npos)
      << decoded.error().context;
  EXPECT_NE(decoded.error().context.find("24 bytes: record 1:"), std::string::npos);
}

TEST(NvmlRecordsTest, ABufferOfOnlyFillIsRefused) {
  // A driver that reports records and writes none (or writes past what it reports).
  std::vector<unsigned char> bytes(16 * kBytesPerRecordSlot, kFillByte);
  EXPECT_FALSE(decode(bytes, 2, modern()).ok());
  EXPECT_FALSE(decode(bytes, 1, modern()).ok());
}

TEST(NvmlRecordsTest, TwoPlausibleDifferentReadingsAreRefused) {
  // Hand-made so that 24 and 32 bytes both pass every check with different lists: when the
  // data cannot tell, gpuclean refuses instead of taking the symbols' word for it.
  std::vector<unsigned char> bytes(16 * kBytesPerRecordSlot, 0);
  auto put32 = [&bytes](std::size_t at, std::uint32_t v) { std::memcpy(&bytes[at], &v, 4); };
  auto put64 = [&bytes](std::size_t at, std::uint64_t v) { std::memcpy(&bytes[at], &v, 8); };
  put32(0, 100);  // record 1 at either stride
  put64(8, kGiB);
  put32(24, 200);  // record 2 at 24: pid 200, memory 300 B, no MIG instance
  put64(32, 300);  // record 2 at 32: pid 300, memory "not available" (bytes 40..47)
  put32(40, kNoInstance);
  put32(44, kNoInstance);
  ASSERT_FALSE(implausible_at(bytes, 2, 24, kLimits).has_value());
  ASSERT_FALSE(implausible_at(bytes, 2, 32, kLimits).has_value());
  auto decoded = decode(bytes, 2, modern());
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().context.find("both decode plausibly"), std::string::npos);
}

}  // namespace
}  // namespace gpuclean::nvml
