// `gpuclean run --record FILE`'s document (output/run_record.h writes it) read back and
// checked, for `gpuclean plot`.
#pragma once

#include <string_view>

#include "core/result.h"
#include "core/run_record.h"

namespace gpuclean::input {

// Parses a record written by output::to_json. Errors (errnum 0) say what is wrong: not JSON, a
// schema this build does not know, a missing or mistyped field. Fields a record may lack
// (no GPUs, no samples) come back empty.
Result<RunRecord> parse_run_record(std::string_view text);

}  // namespace gpuclean::input
