// `gpuclean history --report`: what leftovers cost (core/leftover_cost.h), as text for a person
// and as one JSON document. Command lines, users and owners are the history's untrusted text,
// escaped before a terminal sees them.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <nlohmann/json.hpp>

#include "core/leftover_cost.h"

namespace gpuclean::output {

// The longest-lived leftovers the text lists (JSON lists them all).
inline constexpr std::size_t kReportLeftoverLines = 10;

// Totals, the groups as a table, the longest-lived leftovers with how each ended.
void render_leftover_cost_text(std::ostream& out, const LeftoverCostReport& report);

// {"schema": 1, "since", "until", "by", "gib_hours", "byte_seconds", …} (docs/reference.md,
// "history --report").
nlohmann::json leftover_cost_json(const LeftoverCostReport& report);

// "how" of a leftover's end in JSON: "killed", "exited", "reclassed", "still-there".
const char* to_string(LeftoverEnd::How how);

}  // namespace gpuclean::output
