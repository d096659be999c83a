// `gpuclean diff` and `gpuclean check --against`: the differences between two snapshots as
// text, JSON, or one check line per result-changing difference.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/snapshot.h"

namespace gpuclean::output {

// A header line, then "  ✗ message" (result-changing) or "  · message" (informational) per
// difference, then a summary line. Untrusted text is escaped.
void render_diff_text(std::ostream& out, const DiffReport& report);
// {schema, host, time, "before"/"after": {source, host, time}, "result_changing": N,
//  "differences": [{category, gpu, field, before, after, result_changing, message}]}.
nlohmann::json diff_document(const DiffReport& report, const std::string& host, double now);
// `check --against`: "gpuclean: MESSAGE (since SNAPSHOT)" per result-changing difference.
void render_against_lines(std::ostream& out, const DiffReport& report);

}  // namespace gpuclean::output
