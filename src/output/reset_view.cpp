#include "output/reset_view.h"

#include <fmt/format.h>

#include <ostream>

#include "output/json.h"

namespace gpuclean::output {

namespace {

std::size_t refusing(const GpuResetPlan& gpu) {
  std::size_t n = 0;
  for (const ResetBlocker& b : gpu.blockers) n += b.refuses ? 1 : 0;
  return n;
}

}  // namespace

void render_reset_plan_text(std::ostream& out, const ResetPlan& plan) {
  for (const GpuResetPlan& gpu : plan.gpus) {
    const std::size_t refused = refusing(gpu);
    out << fmt::format("GPU {} ({}): ", gpu.gpu, gpu.pci_bus_id);
    if (gpu.blockers.empty()) {
      out << "nothing stands in the way\n";
    } else {
      out << fmt::format(
          "{} in the way{}\n", gpu.blockers.size(),
          refused > 0 ? fmt::format(", {} of them refusing the reset", refused) : std::string());
    }
    std::size_t step = 0;
    for (const ResetBlocker& b : gpu.blockers) {
      out << fmt::format("  {}. {:<17}{}{}\n", ++step, to_string(b.kind), b.what,
                         b.refuses ? "  [refuses]" : "");
      out << fmt::format("     {:<17}-> {}\n", "", b.how);
    }
    out << "  then: " << gpu.command << '\n';
    out << "  checked after:";
    for (const std::string& check : gpu.checks) out << "\n    - " << check;
    out << '\n';
  }
  if (plan.gpus.empty()) {
    out << "No GPU selected.\n";
  } else if (plan.runnable()) {
    out << "Nothing refuses the reset. gpuclean carries out no reset itself yet: the steps "
           "above, in order, then the command.\n";
  } else {
    out << "The reset is refused: each [refuses] needs a person first (or --force, for a job "
           "at work).\n";
  }
}

nlohmann::json reset_plan_json(const ResetPlan& plan) {
  nlohmann::json doc = {{"schema", 1},
                        {"runnable", plan.runnable()},
                        {"force", plan.force},
                        {"gpus", nlohmann::json::array()}};
  for (const GpuResetPlan& gpu : plan.gpus) {
    nlohmann::json blockers = nlohmann::json::array();
    for (const ResetBlocker& b : gpu.blockers) {
      blockers.push_back({{"kind", to_string(b.kind)},
                          {"pids", b.pids},
                          {"what", b.what},
                          {"how", b.how},
                          {"unit", text_or_null(b.unit)},
                          {"refuses", b.refuses}});
    }
    doc["gpus"].push_back({{"gpu", gpu.gpu},
                           {"uuid", gpu.uuid},
                           {"pci_bus_id", gpu.pci_bus_id},
                           {"blockers", blockers},
                           {"reset_together", gpu.reset_together},
                           {"command", gpu.command},
                           {"checks", gpu.checks}});
  }
  return doc;
}

}  // namespace gpuclean::output
