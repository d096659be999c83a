#include "input/action_reader.h"

#include <nlohmann/json.hpp>

namespace gpuclean::input {

namespace {

using nlohmann::json;

// The targets a kill's action names gone, by PID and start ticks (output/kill_view.cpp's
// kill_action_json writes them); entries of another shape are passed over.
std::vector<std::pair<Pid, std::uint64_t>> gone_targets(const json& detail) {
  std::vector<std::pair<Pid, std::uint64_t>> gone;
  const auto targets = detail.find("targets");
  if (targets == detail.end() || !targets->is_array()) return gone;
  for (const json& target : *targets) {
    if (!target.is_object()) continue;
    const auto pid = target.find("pid");
    const auto start = target.find("start_ticks");
    const auto outcome = target.find("outcome");
    if (pid == target.end() || !pid->is_number_integer() || start == target.end() ||
        !start->is_number_unsigned() || outcome == target.end() || *outcome != "gone") {
      continue;
    }
    gone.emplace_back(pid->get<Pid>(), start->get<std::uint64_t>());
  }
  return gone;
}

}  // namespace

std::optional<RecordedAction> read_action(const HistoryEvent& event) {
  if (event.kind != HistoryEventKind::kAction ||
      json_nesting_depth(event.detail) > kMaxActionDepth) {
    return std::nullopt;
  }
  const json detail = json::parse(event.detail, nullptr, false);
  if (!detail.is_object()) return std::nullopt;
  const auto uid = detail.find("uid");
  const auto command = detail.find("command");
  if (uid == detail.end() || !uid->is_number_unsigned() || command == detail.end() ||
      !command->is_string()) {
    return std::nullopt;
  }
  RecordedAction action;
  action.time = event.time;
  action.uid = uid->get<std::uint32_t>();
  action.command = command->get<std::string>();
  if (const auto user = detail.find("user"); user != detail.end() && user->is_string()) {
    action.user = user->get<std::string>();
  }
  if (const auto sender = detail.find("sender_pid");
      sender != detail.end() && sender->is_number_integer()) {
    action.sender_pid = sender->get<Pid>();
  }
  if (action.command == "kill") action.gone = gone_targets(detail);
  return action;
}

}  // namespace gpuclean::input
