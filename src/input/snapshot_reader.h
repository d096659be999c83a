// A snapshot document (`gpuclean snapshot`, output/snapshot_json.h's) read back and checked, for
// `diff` and `check --against`.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/snapshot.h"

namespace gpuclean::input {

// Reads a snapshot document (parse_snapshot: from its text). Errors (errnum 0) say what is wrong
// without the file name: "not valid JSON: …", "truncated: …", "schema 2 is newer than this gpuclean
// reads (1)", "gpus[0].clocks.sm.current: expected a non-negative integer, found string". Fields
// that are missing or null are unknown (nullopt), never an error.
Result<Snapshot> parse_snapshot(std::string_view text);
Result<Snapshot> read_snapshot(const nlohmann::json& document);

}  // namespace gpuclean::input
