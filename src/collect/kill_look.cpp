#include "collect/kill_look.h"

#include <thread>
#include <utility>

#include "diagnose/kill_check.h"
#include "diagnose/unseen.h"

namespace gpuclean::collect {
namespace {

using Clock = std::chrono::steady_clock;

// How often NVML is asked whether the targets' memory is back. An NVML query is ~0.03 ms
// in-process (docs/facts.md); the release itself takes ~0.12–0.16 s after the exit.
constexpr auto kPoll = std::chrono::milliseconds(25);

}  // namespace

KillLook look_after_kill(Gatherer& gatherer, const KillLookRequest& request) {
  KillLook look;
  diagnose::TargetMemory memory;
  if (!request.listed.empty()) {
    const auto deadline = request.survivors ? Clock::now() : Clock::now() + request.wait;
    look.answered = false;
    while (true) {
      if (auto view = gatherer.query_gpu_view()) {
        look.answered = true;
        memory = diagnose::target_memory(*view, request.listed);
        if (memory.empty()) {
          look.left.memory_back_seconds =
              std::chrono::duration<double>(Clock::now() - request.started).count();
          break;
        }
      }
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(kPoll);
    }
  }
  look.left.memory = memory.lines;
  Gathered after = gatherer.collect();
  look.nvml_after = after.nvml_state;
  look.nvml_after_message = after.nvml_message;
  const diagnose::Unseen unseen = unseen_in(after);
  look.unseen_decides = unseen.decides;
  look.left.unseen = unseen.message;
  const Diagnosis now = diagnose::diagnose(std::move(after.input), request.diagnose_options);
  diagnose::add_others(now, request.ours, memory, request.diagnose_options.max_unattributed,
                       look.left);
  return look;
}

}  // namespace gpuclean::collect
