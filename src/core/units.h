// Human-readable units for bytes and durations.
#pragma once

#include <string>
#include <string_view>

#include "core/model.h"
#include "core/result.h"

namespace gpuclean {

constexpr Bytes kMiB = 1024ull * 1024ull;
constexpr Bytes kGiB = 1024ull * kMiB;

// "76.0 GiB", "512 MiB", "0 B": binary units, one decimal from GiB up.
std::string format_bytes(Bytes bytes);

// A size as users type it: "256MiB", "1GiB", "512M", "1G", "4096" (bytes); K/M/G/T and their
// -iB forms are all binary (1024-based), as memory is counted everywhere in gpuclean.
Result<Bytes> parse_size(std::string_view text);

// "45s", "12m", "3h 5m", "2d 4h": coarse age of a process.
std::string format_age(double seconds);

}  // namespace gpuclean
