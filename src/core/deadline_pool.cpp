#include "core/deadline_pool.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

namespace gpuclean {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kIdle = std::numeric_limits<std::size_t>::max();
constexpr std::size_t kLeftBehind = kIdle - 1;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// One worker thread. `item` is the handshake that decides, for an item that finishes just as
// its deadline passes, whether it counts as done or overdue: the worker swaps it from the item
// back to kIdle, the coordinator from the item to kLeftBehind; exactly one of them succeeds.
struct Runner {
  std::atomic<std::size_t> item{kIdle};
  std::atomic<std::int64_t> since_ns{0};  // when `item` started
  bool finished = false;                  // guarded by Shared::mutex
  bool left_behind = false;               // guarded by Shared::mutex
  std::thread thread;
};

struct Shared {
  std::function<void(std::size_t)> work;
  std::size_t count = 0;
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::condition_variable changed;
};

void work_loop(const std::shared_ptr<Shared>& shared, const std::shared_ptr<Runner>& runner) {
  for (;;) {
    const std::size_t i = shared->next.fetch_add(1, std::memory_order_relaxed);
    if (i >= shared->count) break;
    runner->since_ns.store(now_ns());
    runner->item.store(i);
    shared->work(i);
    std::size_t expected = i;
    // Lost the swap: the coordinator gave up on this item and on this thread; it has gone on
    // without us (possibly returned). Touch nothing more.
    if (!runner->item.compare_exchange_strong(expected, kIdle)) return;
  }
  const std::lock_guard lock(shared->mutex);
  runner->finished = true;
  shared->changed.notify_all();
}

// Starts a worker; false when the system has no thread to give. Workers block every signal:
// one left behind outlives the call, and a process-wide SIGTERM delivered to it (a thread with
// signals unblocked, while `run` blocks them to read them from a signalfd) would end gpuclean
// without its teardown (found in review).
bool start_runner(const std::shared_ptr<Shared>& shared,
                  std::vector<std::shared_ptr<Runner>>& runners) {
  auto runner = std::make_shared<Runner>();
  sigset_t all;
  sigset_t old;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    runner->thread = std::thread(work_loop, shared, runner);
  } catch (const std::system_error&) {
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return false;
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  runners.push_back(std::move(runner));
  return true;
}

}  // namespace

std::vector<std::size_t> run_with_deadline(std::size_t count, const DeadlineOptions& options,
                                           std::function<void(std::size_t)> work) {
  std::vector<std::size_t> overdue;
  if (count == 0) return overdue;
  auto shared = std::make_shared<Shared>();
  shared->work = std::move(work);
  shared->count = count;

  std::vector<std::shared_ptr<Runner>> runners;
  const std::size_t wanted = std::clamp<std::size_t>(options.threads, 1, count);
  std::unique_lock lock(shared->mutex);
  for (std::size_t t = 0; t < wanted; ++t) {
    if (!start_runner(shared, runners)) break;
  }
  if (runners.empty()) {
    lock.unlock();
    if (options.deadline) {
      // No thread to walk away from: a bounded item is not run at all (unknown) rather than
      // run here without its bound (issue 48 item 5: a read that blocks then blocks gpuclean).
      for (std::size_t i = 0; i < count; ++i) overdue.push_back(i);
      return overdue;
    }
    for (std::size_t i = 0; i < count; ++i) shared->work(i);
    return overdue;
  }

  for (;;) {
    const bool done = std::all_of(runners.begin(), runners.end(),
                                  [](const auto& r) { return r->finished || r->left_behind; });
    if (done) break;
    if (!options.deadline) {
      shared->changed.wait(lock);
      continue;
    }
    const auto deadline_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(*options.deadline).count();
    const std::int64_t now = now_ns();
    std::int64_t wake = now + deadline_ns;
    const std::size_t existing = runners.size();  // replacements below need no check yet
    for (std::size_t r = 0; r < existing; ++r) {
      Runner& runner = *runners[r];
      if (runner.finished || runner.left_behind) continue;
      std::size_t item = runner.item.load();
      if (item >= count) continue;  // between items
      const std::int64_t since = runner.since_ns.load();
      if (now - since < deadline_ns) {
        wake = std::min(wake, since + deadline_ns);
        continue;
      }
      if (!runner.item.compare_exchange_strong(item, kLeftBehind)) continue;  // just finished
      runner.left_behind = true;
      runner.thread.detach();
      overdue.push_back(item);
      if (!start_runner(shared, runners)) {
        // No thread for the rest: they are overdue unrun, never run here without the bound.
        for (std::size_t i = shared->next.fetch_add(1); i < count; i = shared->next.fetch_add(1)) {
          overdue.push_back(i);
        }
      }
    }
    shared->changed.wait_until(lock, Clock::time_point(std::chrono::nanoseconds(wake)));
  }
  lock.unlock();
  for (auto& runner : runners) {
    if (!runner->left_behind && runner->thread.joinable()) runner->thread.join();
  }
  std::sort(overdue.begin(), overdue.end());
  return overdue;
}

}  // namespace gpuclean
