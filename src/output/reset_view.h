// `gpuclean reset --plan` (issue 53): the plan as text for a person and as JSON.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "core/reset_model.h"

namespace gpuclean::output {

// Per GPU its blockers in order, each with how it gets out of the way, then the command and the
// checks; last, whether anything refuses the reset.
void render_reset_plan_text(std::ostream& out, const ResetPlan& plan);

// {"schema": 1, "runnable", "force", "gpus": [{"gpu", "uuid", "pci_bus_id", "blockers": [{"kind",
// "pids", "what", "how", "unit", "refuses"}], "reset_together", "command", "checks"}]}.
nlohmann::json reset_plan_json(const ResetPlan& plan);

}  // namespace gpuclean::output
