#include "core/history_event.h"

#include <algorithm>

#include <array>
#include <utility>

namespace gpuclean {
namespace {

// One table for both directions, so a kind written is always a kind read back.
constexpr std::array<std::pair<HistoryEventKind, const char*>, 15> kKindNames = {{
    {HistoryEventKind::kAppeared, "appeared"},
    {HistoryEventKind::kLeft, "left"},
    {HistoryEventKind::kMemoryReturned, "memory_returned"},
    {HistoryEventKind::kClassChanged, "class_changed"},
    {HistoryEventKind::kMemoryChanged, "memory_changed"},
    {HistoryEventKind::kUnattributedAppeared, "unattributed_appeared"},
    {HistoryEventKind::kUnattributedCleared, "unattributed_cleared"},
    {HistoryEventKind::kNvmlFailed, "nvml_failed"},
    {HistoryEventKind::kNvmlRecovered, "nvml_recovered"},
    {HistoryEventKind::kXid, "xid"},
    {HistoryEventKind::kAction, "action"},
    {HistoryEventKind::kRecorderStarted, "recorder_started"},
    {HistoryEventKind::kRecorderStopped, "recorder_stopped"},
    {HistoryEventKind::kActivityChanged, "activity_changed"},
    {HistoryEventKind::kHoldersSkipped, "holders_skipped"},
}};

}  // namespace

const char* to_string(HistoryEventKind kind) {
  for (const auto& [value, name] : kKindNames) {
    if (value == kind) return name;
  }
  return "unknown";
}

std::vector<std::string> history_event_kind_names() {
  std::vector<std::string> names;
  names.reserve(kKindNames.size());
  for (const auto& [value, name] : kKindNames) names.emplace_back(name);
  return names;
}

std::optional<HistoryEventKind> history_event_kind_from_string(std::string_view text) {
  for (const auto& [value, name] : kKindNames) {
    if (text == name) return value;
  }
  return std::nullopt;
}

std::size_t json_nesting_depth(std::string_view text) {
  std::size_t depth = 0;
  std::size_t deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace gpuclean
