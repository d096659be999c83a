// `gpuclean kill`'s views: the plan (text, and --dry-run's JSON) and the report once it acted
// (text and JSON). Pure: the model is core/kill_model.h.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/kill_model.h"
#include "core/model.h"
#include "core/result.h"
#include "output/text_width.h"

namespace gpuclean::output {

// "Plan: 2 processes (STOP, TERM+CONT, KILL after 5 s; wait up to 30 s)" and a row per target,
// children indented under their parents; each line cut to `width` columns (a terminal's, as
// status's table is: a wrapped row reads as two targets).
void render_kill_plan_text(std::ostream& out, const KillPlan& plan, const KillSteps& steps,
                           std::size_t width = kNoWidthLimit);

// --dry-run --json: the steps, the targets (what the plan's rows show, and the PID@START
// identity), the selected processes skipped and the PIDs not found, and why a confirmation would
// be asked.
nlohmann::json kill_dry_run_json(const KillDryRun& dry_run, const std::string& host, double now);

// The selected processes kill leaves alone, for stderr: one line per process, but one line for
// each reason more than three share ("not touching 65 processes: a kernel thread (pids 2, 3, 4,
// …)": `kill --user root` selects every kernel thread).
std::vector<std::string> skipped_lines(const std::vector<KillSkip>& skipped);

// The report: a line per process met, the memory left, what others hold, and the summary.
void render_kill_report_text(std::ostream& out, const KillReport& report);

nlohmann::json kill_report_json(const KillReport& report);

// What `kill` hands the flight recorder (recorder/action_socket.h): its arguments, exit code,
// verdict and, per target met (at most kMaxActionTargets), PID, start, class and outcome.
inline constexpr std::size_t kMaxActionTargets = 64;
nlohmann::json kill_action_json(const KillReport& report, const std::vector<std::string>& args,
                                int exit_code);

// Why the GPU memory was not verified, for gpu_not_verified; empty when it was. `message`:
// NVML's own message (for kFailed: the failure that left it unverified).
std::string not_verified_text(MemoryCheck memory, NvmlState nvml_state, const std::string& message);

}  // namespace gpuclean::output
