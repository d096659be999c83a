// `gpuclean kill --dry-run --json`'s document (output/kill_view.h writes it) read back and
// checked, for `top`, which shows the plan before it asks.
#pragma once

#include <string_view>

#include "core/kill_model.h"
#include "core/result.h"

namespace gpuclean::input {

// kill_dry_run_json's document read back (top shows the plan and asks "Kill N processes?"):
// render_kill_plan_text of it prints what kill printed. Errors say which field is wrong.
Result<KillDryRun> parse_kill_dry_run(std::string_view text);

}  // namespace gpuclean::input
