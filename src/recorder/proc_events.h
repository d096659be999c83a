// The kernel's process events connector (netlink CN_PROC: fork, exec, exit), read on a thread
// of its own into a Lineage (recorder/lineage.h), so that a parent living less than one of the
// recorder's looks is still named. Root only (CAP_NET_ADMIN), and a kernel built with
// CONFIG_PROC_EVENTS: where it cannot be had, start() says why and the recorder polls alone.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "core/result.h"
#include "core/unique_fd.h"
#include "procfs/proc_fs.h"
#include "recorder/lineage.h"

namespace gpuclean::recorder {

// A process event's kernel timestamp as /proc's start ticks. The event is stamped with
// CLOCK_MONOTONIC, which stops while the machine is suspended; /proc/PID/stat counts from
// CLOCK_BOOTTIME, which does not. `suspended_ns` (boottime less monotonic when the event was
// read) closes the gap: without it, after a one-hour suspend every fork was an hour off its
// child's /proc start, and no parent was ever named again (issue 49).
std::uint64_t event_start_ticks(std::uint64_t timestamp_ns, std::uint64_t suspended_ns,
                                long ticks_per_second);
// CLOCK_BOOTTIME less CLOCK_MONOTONIC now: the time this boot spent suspended.
std::uint64_t suspended_ns_now();

class ProcEvents {
 public:
  static Result<std::unique_ptr<ProcEvents>> start(const std::string& proc_root);
  ProcEvents(const ProcEvents&) = delete;
  ProcEvents& operator=(const ProcEvents&) = delete;
  ~ProcEvents();

  [[nodiscard]] std::optional<SeenParent> parent_of(Pid child, std::uint64_t start_ticks) const;
  // Takes in a process that started before the events (its start time from /proc), so that a
  // child it forks is tied to it by identity even when it exits before the fork event is read
  // (kill's targets: a server whose shutdown handler forks and exits at once).
  void know(const ProcessInfo& process);
  // Waits (at most LIMIT) until every fork the kernel reported before this call has been read:
  // forks a child of its own that exits at once and waits for its event (the connector delivers
  // events in order). False when that did not come in time.
  bool catch_up(std::chrono::milliseconds limit) const;

  struct Counts {
    std::uint64_t events = 0;
    std::uint64_t overruns = 0;  // the socket's queue overflowed: events lost (ENOBUFS)
    std::size_t entries = 0;
    std::uint64_t dropped = 0;  // Lineage entries dropped for its bound
  };
  [[nodiscard]] Counts counts() const;

 private:
  ProcEvents(UniqueFd socket, UniqueFd stop, procfs::ProcFs proc)
      : socket_(std::move(socket)), stop_(std::move(stop)), proc_(std::move(proc)) {}
  void loop();
  void handle(const void* event);
  // What /proc says of a process (its start and command line), bounded; nullopt when gone.
  [[nodiscard]] std::optional<ProcessInfo> read(Pid pid) const;
  [[nodiscard]] bool saw_fork_of(Pid pid) const;  // among the last recent_forks_ forks

  UniqueFd socket_;
  UniqueFd stop_;  // an eventfd: written to end the thread
  procfs::ProcFs proc_;
  mutable std::mutex mutex_;
  Lineage lineage_;
  std::uint64_t events_ = 0;
  std::uint64_t overruns_ = 0;
  std::array<Pid, 256> recent_forks_{};  // the children of the last forks, as the events name them
  std::size_t recent_next_ = 0;
  std::thread thread_;
};

}  // namespace gpuclean::recorder
