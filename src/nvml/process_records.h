// NVML's process-list records: which layout a driver uses, and a check that the bytes were read
// with the right one. Pure (no dlopen, no syscalls): tested on raw byte buffers.
//
// Why: the list functions fill an array of records whose size is not in the API. The _v3
// functions write 24-byte nvmlProcessInfo_v2_t records on most drivers (580 included), but
// 32-byte records (an added usedGpuCcProtectedMemory) on 535.43–535.86, which are the drivers
// that export nvmlDeviceGetConfComputeMemSizeInfo and not nvmlDeviceGetRunningProcessDetailList.
// Read with the wrong stride, the second record's memory is its PID number. Other strides are
// reported in the wild, so the stride chosen from the symbols is checked against the data.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace gpuclean::nvml {

constexpr std::size_t kStrideV1 = 16;  // nvmlProcessInfo_v1_t: pid, usedGpuMemory
constexpr std::size_t kStrideV2 = 24;  // nvmlProcessInfo_v2_t: + gpuInstanceId, computeInstanceId
constexpr std::size_t kStrideV3 = 32;  // nvmlProcessInfo_v3_t: + usedGpuCcProtectedMemory

// Bytes of buffer given per record to a list function: twice the largest known stride, so a
// driver with an unknown, larger record cannot write past the buffer (its list is refused).
constexpr std::size_t kBytesPerRecordSlot = 64;
// The buffer is filled with this before the call. Bytes the driver did not write then decode
// as an impossible PID, memory and instance ID: a stride larger than the driver's reads them
// for its last record and fails the check.
constexpr unsigned char kFillByte = 0xA5;

// Linux's PID_MAX_LIMIT on 64-bit: no PID is this large. The bound when pid_max is unreadable.
constexpr Pid kPidMaxLimit = 4194304;

// Which generation of list symbols was bound (nvmlDevice…RunningProcesses_v3, _v2 or none).
enum class ListSymbols { kV1, kV2, kV3 };

// "v1", "v2", "v3".
const char* to_string(ListSymbols symbols);

// What the library exports, as far as the record layout goes.
struct LayoutHints {
  ListSymbols symbols = ListSymbols::kV3;
  bool has_conf_compute_mem_size_info = false;   // nvmlDeviceGetConfComputeMemSizeInfo
  bool has_running_process_detail_list = false;  // nvmlDeviceGetRunningProcessDetailList
};

// The strides to try. `primary`: the layouts this symbol generation is known to use, most
// likely first. `fallback`: tried only when no primary stride decodes plausibly.
struct StrideCandidates {
  std::vector<std::size_t> primary;
  std::vector<std::size_t> fallback;
};

// v1 → {16}; v2 → {24}; v3 → {32, 24} on a 535.43–535.86-shaped library (ConfComputeMemSizeInfo
// without RunningProcessDetailList), else {24, 32}; v3 also falls back to 16 (reported for one
// driver: nvitop PR 226).
StrideCandidates candidate_strides(const LayoutHints& hints);

// What a plausible record may hold.
struct RecordLimits {
  Pid pid_max = kPidMaxLimit;  // /proc/sys/kernel/pid_max: PIDs are 1 … pid_max − 1
  Bytes memory_total = 0;      // the GPU's total memory; 0: unknown (memory is not checked)
};

// The list decoded with `stride`.
struct DecodedList {
  std::size_t stride = 0;
  std::vector<GpuProcess> processes;
};

// Why the list at `stride` is implausible ("record 2: pid 0"), or nullopt when every record is
// plausible: 0 < pid < pid_max; usedGpuMemory ≤ memory_total or NVML_VALUE_NOT_AVAILABLE (then
// the memory is absent); gpuInstanceId and computeInstanceId 0xFFFFFFFF (no MIG) or below
// 1024; usedGpuCcProtectedMemory (32 bytes) like usedGpuMemory; the list's memory together
// ≤ memory_total; `count` records fit in `buffer`.
std::optional<std::string> implausible_at(std::span<const unsigned char> buffer, std::size_t count,
                                          std::size_t stride, const RecordLimits& limits);

// Decodes `count` records from `buffer` (what the list function wrote, the rest filled with
// kFillByte) as processes of `kind`. The stride: the primary candidates whose decode is
// plausible; if they all give the same list (always so for one record), the first of them;
// if none, the same rule over the fallback candidates. Errors (the list is refused, never
// guessed): no candidate decodes plausibly, or two plausible candidates disagree. The error
// context says which and why, e.g. "no record stride decodes plausibly (24 bytes: record 1:
// pid 0; 32 bytes: …)".
Result<DecodedList> decode_process_records(std::span<const unsigned char> buffer, std::size_t count,
                                           const StrideCandidates& strides,
                                           const RecordLimits& limits, GpuProcess::Kind kind);

}  // namespace gpuclean::nvml
