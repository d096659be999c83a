// Human-readable units for bytes and durations.
#pragma once

#include <string>

#include "core/model.h"

namespace gpuclean {

constexpr Bytes kMiB = 1024ull * 1024ull;
constexpr Bytes kGiB = 1024ull * kMiB;

// "76.0 GiB", "512 MiB", "0 B": binary units, one decimal from GiB up.
std::string format_bytes(Bytes bytes);

// "45s", "12m", "3h 5m", "2d 4h": coarse age of a process.
std::string format_age(double seconds);

}  // namespace gpuclean
