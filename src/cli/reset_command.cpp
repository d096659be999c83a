#include "cli/reset_command.h"

#include <algorithm>
#include <ostream>
#include <set>
#include <variant>

#include "cli/status_command.h"
#include "collect/gather.h"
#include "core/diagnostics.h"
#include "diagnose/reset_plan.h"
#include "output/escape.h"
#include "output/json.h"
#include "output/reset_view.h"
#include "procfs/reset_facts.h"

namespace gpuclean::cli {

int run_reset(const ResetCommandOptions& options, const Io& io) {
  // Every GPU is diagnosed (an NVSwitch system resets them all together); --gpus says which
  // the plan is for.
  auto gpus = parse_gpu_list(options.common.gpus);
  if (!gpus.ok()) {
    say(io.err, "reset") << gpus.error().message() << '\n';
    return kExitUsage;
  }
  StatusOptions status;
  status.common = options.common;
  status.common.gpus = "all";
  auto gathered = collect::gather(status.common, {.settle_activity = true});
  if (auto* error = std::get_if<collect::GatherError>(&gathered)) {
    say(io.err, "reset") << error->message << '\n';
    return exit_code_of(*error);
  }
  StatusPrepared prepared =
      prepare_status(status, std::move(std::get<collect::Gathered>(gathered)), io);
  if (!prepared.usable) return prepared.exit_code;
  if (prepared.report.nvml_state != NvmlState::kPresent) {
    const std::string& why = prepared.report.nvml_message;
    say(io.err, "reset") << "NVML " << to_string(prepared.report.nvml_state)
                         << (why.empty() ? "" : " (" + output::escape_terminal(why) + ")")
                         << ": a reset is planned for the GPUs NVML lists, and it lists none\n";
    return kExitRuntime;
  }
  const Diagnosis& diagnosis = prepared.report.diagnosis;
  if (diagnosis.gpus.empty()) {
    say(io.err, "reset") << "NVML lists no GPU: there is nothing to plan a reset for\n";
    return kExitRuntime;
  }
  for (unsigned asked : gpus->value_or(std::set<unsigned>{})) {
    const bool listed = std::any_of(diagnosis.gpus.begin(), diagnosis.gpus.end(),
                                    [asked](const GpuReport& g) { return g.gpu.index == asked; });
    if (!listed) {
      say(io.err, "reset") << "--gpus: NVML lists no GPU " << asked << '\n';
      return kExitUsage;
    }
  }
  std::vector<std::string> bus_ids;
  for (const GpuReport& gpu : diagnosis.gpus) bus_ids.push_back(gpu.gpu.pci_bus_id);
  diagnose::ResetOptions plan_options;
  plan_options.force = options.force;
  if (*gpus) plan_options.gpus = **gpus;
  const ResetPlan plan = diagnose::plan_reset(
      diagnosis, procfs::read_reset_facts(options.roots.sys, bus_ids), plan_options);
  if (options.common.json) {
    output::write_json(io.out, output::reset_plan_json(plan));
  } else {
    output::render_reset_plan_text(io.out, plan);
  }
  return plan.runnable() ? kExitClean : kExitDirty;
}

}  // namespace gpuclean::cli
