// `gpuclean diff` and `gpuclean check --against`: the differences between two snapshots as
// text, JSON, or one check line per result-changing difference.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/snapshot.h"

namespace gpuclean::output {

// Where one side of a comparison came from.
struct DiffSide {
  std::string source;  // the file, or "now"
  std::string host;    // as recorded ("" when unknown)
  std::string time;
};

struct DiffReport {
  DiffSide before;
  DiffSide after;
  std::vector<Difference> differences;  // ordered as diff_snapshots returns them
};

// A header line, then "  ✗ message" (result-changing) or "  · message" (informational) per
// difference, then a summary line. Untrusted text is escaped.
void render_diff_text(std::ostream& out, const DiffReport& report);
// {schema, host, time, "before"/"after": {source, host, time}, "result_changing": N,
//  "differences": [{category, gpu, field, before, after, result_changing, message}]}.
nlohmann::json diff_document(const DiffReport& report, const std::string& host, double now);
// `check --against`: "gpuclean: MESSAGE (since SNAPSHOT)" per result-changing difference.
void render_against_lines(std::ostream& out, const DiffReport& report);

// How many differences can change a result.
std::size_t result_changing_count(const DiffReport& report);

}  // namespace gpuclean::output
