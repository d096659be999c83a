// run_with_deadline: an item that blocks is walked away from, the others all finish, and an
// item that finishes in time is never reported. Blocking items wait on a pipe the test owns and
// always releases, so no thread outlives the test for long.
#include "core/deadline_pool.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

namespace gpuclean {
namespace {

using namespace std::chrono_literals;

// A gate items can block on (a read on a pipe: a blocking system call, as a /proc read is).
struct Gate {
  Gate() { EXPECT_EQ(::pipe2(fds.data(), O_CLOEXEC), 0); }
  ~Gate() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  void wait() const {
    char byte = 0;
    (void)!::read(fds[0], &byte, 1);
  }
  void open_for(int waiters) const {
    for (int i = 0; i < waiters; ++i) (void)!::write(fds[1], "x", 1);
  }
  std::array<int, 2> fds{};
};

struct Results {
  std::array<std::atomic<int>, 64> done{};
};

TEST(DeadlinePoolTest, BlockedItemsAreOverdueAndTheRestFinish) {
  auto gate = std::make_shared<Gate>();
  auto results = std::make_shared<Results>();
  const auto started = std::chrono::steady_clock::now();
  const auto overdue =
      run_with_deadline(40, {.threads = 4, .deadline = 1s}, [gate, results](std::size_t i) {
        if (i == 7 || i == 23) gate->wait();
        results->done[i] = 1;
      });
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(overdue, (std::vector<std::size_t>{7, 23}));
  for (std::size_t i = 0; i < 40; ++i) {
    if (i != 7 && i != 23) {
      EXPECT_EQ(results->done[i], 1) << "item " << i;
    }
  }
  // Two blocked items in parallel workers: about one deadline, not two, and far from forever.
  EXPECT_LT(took, 5s);
  gate->open_for(2);  // the left-behind workers finish and end
}

TEST(DeadlinePoolTest, EveryWorkerBlockedStillFinishesTheQueue) {
  // More blocked items than workers: each replacement carries on with the queue.
  auto gate = std::make_shared<Gate>();
  auto results = std::make_shared<Results>();
  const auto overdue =
      run_with_deadline(10, {.threads = 2, .deadline = 500ms}, [gate, results](std::size_t i) {
        if (i < 3) gate->wait();
        results->done[i] = 1;
      });
  EXPECT_EQ(overdue, (std::vector<std::size_t>{0, 1, 2}));
  for (std::size_t i = 3; i < 10; ++i) EXPECT_EQ(results->done[i], 1) << "item " << i;
  gate->open_for(3);
}

TEST(DeadlinePoolTest, WithoutADeadlineItWaits) {
  // Negative control: the same slow item, no deadline: waited for, never overdue.
  auto results = std::make_shared<Results>();
  const auto overdue =
      run_with_deadline(3, {.threads = 2, .deadline = std::nullopt}, [results](std::size_t i) {
        if (i == 1) std::this_thread::sleep_for(300ms);
        results->done[i] = 1;
      });
  EXPECT_TRUE(overdue.empty());
  EXPECT_EQ(results->done[1], 1);
}

TEST(DeadlinePoolTest, NoItemsNoThreads) {
  bool ran = false;
  EXPECT_TRUE(run_with_deadline(0, {.threads = 4, .deadline = 1ms}, [&ran](std::size_t) {
                ran = true;
              }).empty());
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace gpuclean
