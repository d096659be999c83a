// `gpuclean` / `gpuclean status` and `gpuclean check`: the diagnosis as a screen, as JSON, or
// as one line per problem.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/history_event.h"
#include "core/model.h"
#include "core/verdict.h"

namespace gpuclean::output {

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
};

// docs/reference.md's verdict. NVML present but failing means the memory answer is not known: the
// verdict is then unknown, never clean (nor dirty — what /proc shows is still listed).
// The enum and its spelling live in core/verdict.h (kill's verdict is decided in diagnose/).
using gpuclean::to_string;
using gpuclean::Verdict;

// kUnknown when NVML failed; else kDirty when the diagnosis found an error (warnings alone leave
// it clean); else kUnknown when what the scan could not read decides it (unseen_decides: a
// problem seen is dirty whatever was not), kClean otherwise.
Verdict verdict_of(const StatusReport& report);

struct TextStyle {
  bool color = false;  // ANSI colours (a terminal, and NO_COLOR unset)
  int width = 100;     // terminal columns
};

void render_status_text(std::ostream& out, const StatusReport& report, const TextStyle& style);
void render_status_json(std::ostream& out, const StatusReport& report);
// `check`: "gpuclean: MESSAGE" per problem that is an error, nothing when clean.
void render_check_lines(std::ostream& out, const StatusReport& report);
// `check`'s warnings (problems that leave the GPUs clean): "gpuclean: warning: MESSAGE" each.
void render_check_warnings(std::ostream& out, const StatusReport& report);

// A holder's CLASS cell: its class, or the node service it is ("mps-server", and
// "mps-server/stuck" when it is not at work).
std::string class_label(const Holder& holder);

// [████▒▒····]: attributed, unattributed, free, in `width` cells.
std::string memory_bar(Bytes total, Bytes attributed, Bytes unattributed, int width);

}  // namespace gpuclean::output
