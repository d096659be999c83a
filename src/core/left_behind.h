// Work left behind by run_with_deadline (core/deadline_pool.h) that may still be blocked: a
// read of a file system or driver that stopped answering. Such work is not started again until
// the first one has returned — one thread left behind per stuck read, not one per look (issue 48
// item 5: ten looks of `top`, the recorder or `metrics` left ten threads).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

namespace gpuclean {

template <typename Key>
class LeftBehind {
 public:
  // A flag for a new piece of work: its worker sets it once the work has returned.
  static std::shared_ptr<std::atomic<bool>> new_flag() {
    return std::make_shared<std::atomic<bool>>(false);
  }
  // Whether the work for `key` left behind earlier is still running; forgets it once returned.
  bool still_running(const Key& key) {
    const std::lock_guard lock(mutex_);
    auto it = work_.find(key);
    if (it == work_.end()) return false;
    if (!it->second->load()) return true;
    work_.erase(it);
    return false;
  }
  // Work for `key` that ran past its deadline, with the flag its worker sets on return.
  void remember(const Key& key, const std::shared_ptr<std::atomic<bool>>& returned) {
    const std::lock_guard lock(mutex_);
    work_[key] = returned;
  }

 private:
  std::mutex mutex_;
  std::map<Key, std::shared_ptr<std::atomic<bool>>> work_;
};

}  // namespace gpuclean
