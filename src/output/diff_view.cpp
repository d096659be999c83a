#include "output/diff_view.h"

#include <algorithm>

#include "core/diagnostics.h"
#include "output/escape.h"
#include "output/json.h"

namespace gpuclean::output {
namespace {

std::string describe(const DiffSide& side) {
  std::string text = side.source;
  if (!side.host.empty() || !side.time.empty()) {
    text +=
        " (" + side.host + (side.host.empty() || side.time.empty() ? "" : ", ") + side.time + ")";
  }
  return escape_terminal(text);
}

nlohmann::json side_json(const DiffSide& side) {
  return {{"source", side.source}, {"host", side.host}, {"time", side.time}};
}

}  // namespace

void render_diff_text(std::ostream& out, const DiffReport& report) {
  out << "gpuclean diff: " << describe(report.before) << " → " << describe(report.after) << '\n';
  if (report.differences.empty()) {
    out << "No differences.\n";
    return;
  }
  for (const Difference& d : report.differences) {
    out << "  " << (d.result_changing ? "✗ " : "· ") << escape_terminal(d.message) << '\n';
  }
  const std::size_t changing = result_changing_count(report);
  const std::size_t total = report.differences.size();
  out << total << (total == 1 ? " difference, " : " differences, ") << changing << " can"
      << " change a benchmark result (✗)\n";
}

nlohmann::json diff_document(const DiffReport& report, const std::string& host, double now) {
  nlohmann::json doc = document_header(host, now);
  doc["before"] = side_json(report.before);
  doc["after"] = side_json(report.after);
  doc["result_changing"] = result_changing_count(report);
  nlohmann::json differences = nlohmann::json::array();
  for (const Difference& d : report.differences) {
    differences.push_back({{"category", to_string(d.category)},
                           {"gpu", or_null(d.gpu)},
                           {"field", d.field},
                           {"before", d.before},
                           {"after", d.after},
                           {"result_changing", d.result_changing},
                           {"message", d.message}});
  }
  doc["differences"] = std::move(differences);
  return doc;
}

void render_against_lines(std::ostream& out, const DiffReport& report) {
  for (const Difference& d : report.differences) {
    if (!d.result_changing) continue;
    say(out) << escape_terminal(d.message) << " (since " << escape_terminal(report.before.source)
             << ")\n";
  }
}

}  // namespace gpuclean::output
