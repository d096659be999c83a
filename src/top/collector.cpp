#include "top/collector.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <utility>

namespace gpuclean::top {

Collector::Collector(std::shared_ptr<collect::Gatherer> gatherer, Duration delay)
    : state_(std::make_shared<State>()) {
  state_->gatherer = std::move(gatherer);
  state_->delay = delay;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    state_->ready_read = UniqueFd(fds[0]);
    state_->ready_write = UniqueFd(fds[1]);
  }
  // The thread, and the scan threads it starts, take none of the signals the main thread's
  // poll must be interrupted by. Only those: a fault (SIGSEGV, …) raised while blocked would
  // bypass the handler that restores the terminal (the review found it).
  sigset_t waited;
  sigset_t previous;
  sigemptyset(&waited);
  for (int signo : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) sigaddset(&waited, signo);
  ::pthread_sigmask(SIG_BLOCK, &waited, &previous);
  thread_ = std::thread([state = state_] { loop(*state); });
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

bool Collector::stop(Duration patience) {
  if (!thread_.joinable()) return true;
  std::unique_lock lock(state_->mutex);
  state_->stopping = true;
  state_->wake.notify_all();
  if (!state_->finished_cv.wait_for(lock, patience, [this] { return state_->finished; })) {
    lock.unlock();
    thread_.detach();
    return false;
  }
  lock.unlock();
  thread_.join();
  return true;
}

std::optional<collect::Gathered> Collector::take() {
  char drain[64];
  while (::read(state_->ready_read.get(), drain, sizeof(drain)) > 0) {
  }
  std::lock_guard lock(state_->mutex);
  std::optional<collect::Gathered> latest = std::move(state_->latest);
  state_->latest.reset();
  return latest;
}

void Collector::refresh_now() {
  std::lock_guard lock(state_->mutex);
  state_->refresh_now = true;
  state_->wake.notify_all();
}

std::optional<Collector::Clock::time_point> Collector::busy_since() {
  std::lock_guard lock(state_->mutex);
  return state_->busy_since;
}

void Collector::loop(State& state) {
  std::unique_lock lock(state.mutex);
  // The first collection was made before the screen opened: the next one is a delay later.
  auto started = Clock::now();
  while (true) {
    state.wake.wait_until(lock, started + state.delay,
                          [&state] { return state.stopping || state.refresh_now; });
    state.refresh_now = false;
    if (state.stopping) break;
    started = Clock::now();
    state.busy_since = started;
    lock.unlock();
    collect::Gathered gathered = state.gatherer->collect();
    lock.lock();
    state.busy_since.reset();
    state.latest = std::move(gathered);
    const char byte = 'r';
    [[maybe_unused]] const ssize_t ignored = ::write(state.ready_write.get(), &byte, 1);
  }
  state.finished = true;
  state.finished_cv.notify_all();
}

}  // namespace gpuclean::top
