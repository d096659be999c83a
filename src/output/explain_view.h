// `gpuclean explain PID`: everything known about one process and why it does or does not hold
// GPU memory — including a PID that NVML names and /proc no longer has.
#pragma once

#include <optional>
#include <ostream>

#include "core/history_event.h"
#include "core/model.h"
#include "output/status_view.h"

namespace gpuclean::output {

struct ExplainSubject {
  Pid pid = 0;  // the thread group explained (the leader's PID)
  // The ID asked about, when it is a thread of `pid` that does not lead it (`explain TID`).
  std::optional<Pid> thread;
  std::optional<Holder> holder;        // when the diagnosis has it (holders, NVML's dead pids)
  std::optional<ProcessInfo> process;  // when /proc has it but it holds nothing
  std::optional<ProcessInfo> parent;   // its parent, when readable
  // Its parent as the flight recorder captured it (`history`), when the recorder has it.
  std::optional<RecordedParent> recorded_parent;
};

void render_explain_text(std::ostream& out, const StatusReport& report,
                         const ExplainSubject& subject);
void render_explain_json(std::ostream& out, const StatusReport& report,
                         const ExplainSubject& subject);

}  // namespace gpuclean::output
