// An action event's JSON (a gpuclean kill or run, as the recorder stored it) read back for the
// leftover cost report (diagnose/leftover_cost.h). Any local user can send an action, so every
// field is checked for its type and the nesting is bounded; what does not read is no action.
#pragma once

#include <optional>

#include "core/history_event.h"

namespace gpuclean::input {

// The kill or run an action event records; nullopt for another command, text that is not a
// JSON object, or one without the kernel's uid the recorder adds.
std::optional<RecordedAction> read_action(const HistoryEvent& event);

}  // namespace gpuclean::input
