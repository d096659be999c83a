// GpuSource: where the GPU view comes from. The real one is NVML (nvml_source.h); tests use
// FakeGpuSource (a JSON description) so diagnose/ and the CLI run in CI without a GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/snapshot.h"

namespace gpuclean::nvml {

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // Everything NVML says about every GPU, in NVML index order. An Error means the view would
  // be wrong (a query failed mid-way), not merely incomplete: optional fields cover that.
  virtual Result<GpuView> query() = 0;
  // The snapshot-only facts (clocks, throttle reasons, ECC, …) of every GPU, NVML index
  // order. Never fails: what a GPU or driver does not answer stays empty. Not called by
  // status/check: these are a dozen extra calls per GPU.
  virtual std::vector<GpuDetails> query_details() { return {}; }
};

// The outcome of trying to open a source. "Absent" (no NVIDIA driver or library) is a normal
// state of a machine; "failed" (library present, but init or a query failed) is not.
struct OpenedSource {
  enum class State { kPresent, kAbsent, kFailed };
  State state = State::kAbsent;
  std::unique_ptr<GpuSource> source;  // set when present
  std::string message;                // why absent or failed, for one line on stderr
};

}  // namespace gpuclean::nvml
