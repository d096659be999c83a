// `gpuclean` / `gpuclean status` and `gpuclean check`: the diagnosis as a screen, as JSON, or
// as one line per problem.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/status_report.h"

namespace gpuclean::output {

// The report and its verdict are decided in core/ and diagnose/ (diagnose/verdict.h); the
// views print them.
using gpuclean::to_string;
using gpuclean::Verdict;

struct TextStyle {
  bool color = false;  // ANSI colours (a terminal, and NO_COLOR unset)
  int width = 100;     // terminal columns
};

void render_status_text(std::ostream& out, const StatusReport& report, const TextStyle& style);
void render_status_json(std::ostream& out, const StatusReport& report);
// `check`: "gpuclean: MESSAGE" per problem that is an error, nothing when clean.
void render_check_lines(std::ostream& out, const StatusReport& report);
// `check`'s warnings (problems that leave the GPUs clean): "gpuclean: warning: MESSAGE" each.
void render_check_warnings(std::ostream& out, const StatusReport& report);

// A holder's CLASS cell: its class, or the node service it is ("mps-server", and
// "mps-server/stuck" when it is not at work).
std::string class_label(const Holder& holder);

// [████▒▒····]: attributed, unattributed, free, in `width` cells.
std::string memory_bar(Bytes total, Bytes attributed, Bytes unattributed, int width);

}  // namespace gpuclean::output
