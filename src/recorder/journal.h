// Each recorder event to the systemd journal as structured fields (GPUCLEAN_EVENT=,
// GPUCLEAN_PID=, …), so that a fleet carries history with the log pipeline it already has
// (journald forwarding, Loki, Elasticsearch): docs/fleet.md. Spoken in journald's native
// protocol (systemd's "Native Journal Protocol": one datagram per entry, KEY=VALUE lines, a
// value with a newline in the binary form) on its socket, so no libsystemd is linked.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/history_event.h"
#include "core/unique_fd.h"

namespace gpuclean::recorder {

inline constexpr const char* kJournalSocket = "/run/systemd/journal/socket";

using JournalFields = std::vector<std::pair<std::string, std::string>>;

// One entry in the native protocol's bytes.
std::string journal_datagram(const JournalFields& fields);

// The fields of one event: MESSAGE (a line a person reads), PRIORITY, SYSLOG_IDENTIFIER and
// GPUCLEAN_* (docs/reference.md "history").
JournalFields journal_fields(const HistoryEvent& event);

class JournalSink {
 public:
  // A sink for the socket at `path`; it sends nowhere (and says so through connected()) when
  // journald does not listen there.
  explicit JournalSink(const std::string& path);
  [[nodiscard]] bool connected() const { return static_cast<bool>(fd_); }
  // False when the entry was not taken (journald gone or its queue full): counted as a drop.
  // An entry too big for one datagram goes in a sealed memfd, as the protocol allows.
  bool send(const JournalFields& fields);

 private:
  [[nodiscard]] bool send_in_memfd(const std::string& entry) const;

  UniqueFd fd_;
};

}  // namespace gpuclean::recorder
