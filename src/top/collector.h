// top's collections on a thread of their own, one per delay: a scan of a crowded /proc or an
// NVML call held by a wedged driver (bounded by --nvml-timeout) never freezes the screen or the
// keys. Everything the thread touches is shared-owned: if it cannot be joined promptly at quit
// (an answer still awaited), it is left behind and the process exits around it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "collect/gather.h"
#include "core/duration.h"
#include "core/unique_fd.h"

namespace gpuclean::top {

class Collector {
 public:
  using Clock = std::chrono::steady_clock;

  // The first collection was made before: the thread's first is `delay` later. The thread
  // blocks SIGINT, SIGTERM, SIGHUP and SIGWINCH (the main thread's poll is woken by them), and
  // only those: a fault raised on it must still reach the handler that restores the terminal.
  Collector(std::shared_ptr<collect::Gatherer> gatherer, Duration delay);
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;
  Collector(Collector&&) = delete;
  Collector& operator=(Collector&&) = delete;
  ~Collector() { (void)stop(std::chrono::milliseconds(300)); }

  // Stops the thread; false when it was still collecting after `patience` (then detached).
  bool stop(Duration patience);
  // Readable once a collection is ready to take().
  [[nodiscard]] int ready_fd() const { return state_->ready_read.get(); }
  // The newest collection since the last take(), if any.
  std::optional<collect::Gathered> take();
  // Collect now rather than at the end of the delay (after a kill: the screen shows what is
  // left at once).
  void refresh_now();
  // When the collection under way started, if one is.
  std::optional<Clock::time_point> busy_since();

 private:
  struct State {
    std::shared_ptr<collect::Gatherer> gatherer;
    Duration delay{};
    std::mutex mutex;
    std::condition_variable wake;
    std::condition_variable finished_cv;
    std::optional<collect::Gathered> latest;
    std::optional<Clock::time_point> busy_since;
    bool stopping = false;
    bool refresh_now = false;
    bool finished = false;
    UniqueFd ready_read;
    UniqueFd ready_write;
  };

  static void loop(State& state);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace gpuclean::top
