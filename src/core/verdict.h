// The verdict on the selected GPUs and device files, as status, check, kill and metrics say it
// (JSON's "verdict", docs/reference.md "Verdict").
#pragma once

namespace gpuclean {

// kClean: nothing holds them (warnings aside) and every figure that decides it was seen;
// kDirty: something holds them; kUnknown: what was needed to tell was not seen (NVML failed,
// or processes /proc could not read while the verdict rested on /proc) — never called clean.
enum class Verdict { kClean, kDirty, kUnknown };

// "clean", "dirty", "unknown" (JSON and metrics spell it so).
constexpr const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kClean:
      return "clean";
    case Verdict::kDirty:
      return "dirty";
    case Verdict::kUnknown:
      return "unknown";
  }
  return "unknown";
}

}  // namespace gpuclean
