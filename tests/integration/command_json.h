// What a test reads from a gpuclean run: its whole output for a failure message, its JSON, and
// one holder in it. Shared by the integration and FUSE suites.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <string>

#include <nlohmann/json.hpp>

#include "spawn.h"

namespace gpuclean::testing {

// Exit code, stdout and stderr, for a failure message.
inline std::string both(const CommandResult& result) {
  return "exit " + std::to_string(result.exit_code) + "\n--- stdout\n" + result.out +
         "--- stderr\n" + result.err;
}

// stdout as JSON; a failure (and an empty object) when it is not.
inline nlohmann::json parse(const CommandResult& result) {
  try {
    return nlohmann::json::parse(result.out);
  } catch (const nlohmann::json::exception&) {
    ADD_FAILURE() << "not JSON: " << both(result);
    return nlohmann::json::object();
  }
}

// The holder with `pid` in a status/who document, or nullptr.
inline const nlohmann::json* holder(const nlohmann::json& doc, pid_t pid) {
  if (!doc.contains("holders")) return nullptr;
  for (const nlohmann::json& h : doc.at("holders")) {
    if (h.value("pid", 0) == pid) return &h;
  }
  return nullptr;
}

}  // namespace gpuclean::testing
