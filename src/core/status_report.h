// What status, check, explain, snapshot, metrics and top show: the diagnosis of one look with
// what the look could not see, and the verdict decided from them (diagnose/verdict.h). The
// renderers in output/ only print it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/history_event.h"
#include "core/model.h"
#include "core/verdict.h"

namespace gpuclean {

struct StatusReport {
  std::string host;
  double time = 0;
  NvmlState nvml_state = NvmlState::kDisabled;
  std::string nvml_message;  // why not present
  std::string driver_version;
  std::optional<int> cuda_driver_version;
  std::vector<DeviceFile> files;
  ScanStats stats;
  Diagnosis diagnosis;
  // What the scan could not read (diagnose/unseen.h), said once; `unseen_decides`: it could
  // hold the device unseen, so a verdict that would be clean is unknown.
  std::string unseen_message;
  bool unseen_decides = false;
  // Orphans' parents as the flight recorder captured them (PID of the orphan → its parent),
  // when its database was readable (gpuclean history).
  std::map<Pid, RecordedParent> recorded_parents;
  // diagnose::status_verdict of the fields above, set once they are final; unknown until then,
  // so a report nobody judged is never shown clean.
  Verdict verdict = Verdict::kUnknown;
};

}  // namespace gpuclean
