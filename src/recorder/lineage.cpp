#include "recorder/lineage.h"

#include <utility>

namespace gpuclean::recorder {

bool Lineage::room() {
  if (entries_.size() < kMaxEntries) return true;
  // Full: an exited entry goes first (its children may still need it, but a live process's
  // own entry is worth more); none exited, the new entry is refused.
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.exit_time) {
      entries_.erase(it);
      ++dropped_;
      return true;
    }
  }
  ++dropped_;
  return false;
}

void Lineage::forked(Pid child, Pid parent, std::uint64_t ticks) {
  // A PID seen again is a new process: its old entry (exited, kept for its children) goes.
  if (auto old = entries_.find(child); old != entries_.end()) {
    const Pid old_parent = old->second.parent;
    const bool same_parent = parent_entry(old->second) != nullptr;
    entries_.erase(old);
    if (auto up = entries_.find(old_parent);
        same_parent && up != entries_.end() && up->second.live_children > 0) {
      --up->second.live_children;
      forget_if_done(old_parent);
    }
  }
  if (!room()) return;
  Entry entry;
  entry.parent = parent;
  entry.start_ticks = ticks;
  if (auto up = entries_.find(parent); up != entries_.end()) {
    entry.argv = up->second.argv;  // a fork runs its forker's argv until it execs
    entry.parent_start_ticks = up->second.start_ticks;
    ++up->second.live_children;
  }
  entries_[child] = std::move(entry);
}

const Lineage::Entry* Lineage::parent_entry(const Entry& entry) const {
  const auto up = entries_.find(entry.parent);
  if (up == entries_.end()) return nullptr;
  if (entry.parent_start_ticks && up->second.start_ticks != *entry.parent_start_ticks) {
    return nullptr;  // the parent's PID was handed on: that entry is another process's
  }
  return &up->second;
}

void Lineage::known(Pid pid, std::uint64_t start_ticks, std::vector<std::string> argv) {
  if (entries_.count(pid) != 0 || !room()) return;
  Entry entry;
  entry.start_ticks = start_ticks;
  entry.argv = std::move(argv);
  entries_[pid] = std::move(entry);
}

void Lineage::execed(Pid pid, std::vector<std::string> argv) {
  if (auto it = entries_.find(pid); it != entries_.end()) it->second.argv = std::move(argv);
}

void Lineage::exited(Pid pid, double time) {
  auto it = entries_.find(pid);
  if (it == entries_.end()) return;
  it->second.exit_time = time;
  forget_if_done(pid);
}

void Lineage::forget_if_done(Pid pid) {
  // Up the chain: an exited process no live child needs goes, and its parent loses a child.
  while (true) {
    auto it = entries_.find(pid);
    if (it == entries_.end() || !it->second.exit_time || it->second.live_children > 0) return;
    const Pid parent = it->second.parent;
    const bool same_parent = parent_entry(it->second) != nullptr;
    entries_.erase(it);
    auto up = entries_.find(parent);
    if (!same_parent || up == entries_.end() || up->second.live_children == 0) return;
    --up->second.live_children;
    pid = parent;
  }
}

std::optional<SeenParent> Lineage::parent_of(Pid child, std::uint64_t child_start_ticks) const {
  const auto it = entries_.find(child);
  if (it == entries_.end() || it->second.parent == 0) return std::nullopt;
  const std::uint64_t start = it->second.start_ticks;
  const std::uint64_t gap =
      start > child_start_ticks ? start - child_start_ticks : child_start_ticks - start;
  if (gap > kTicksTolerance) return std::nullopt;  // another process that had this PID
  SeenParent seen;
  seen.pid = it->second.parent;
  seen.start_ticks = it->second.parent_start_ticks;
  if (const Entry* up = parent_entry(it->second)) {
    seen.start_ticks = up->start_ticks;
    seen.argv = up->argv;
    seen.exit_time = up->exit_time;
  }
  return seen;
}

}  // namespace gpuclean::recorder
