// `gpuclean plot` reads a run record that may be hand-edited or hostile: parse it, then print
// its summary and draw it, as plot and run do.
#include "fuzz_check.h"
#include "input/run_record_reader.h"
#include "output/run_plot.h"
#include "output/run_record.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto record = gpuclean::input::parse_run_record(gpuclean::fuzz::as_text(data, size));
  if (!record.ok()) return 0;
  (void)gpuclean::output::run_summary_lines(*record);
  // run_summary_lines() escapes the processes' names and command lines; the reasons, notes and
  // "escaped" lines are gpuclean's own text, escaped when run wrote them, and only `run` prints
  // summary lines (of its own record, never of a file). So the property is checked with those
  // cleared and every process-controlled field left as the input has it.
  for (auto& leftover : record->leftovers) leftover.reason.clear();
  for (auto& gpu : record->gpus) gpu.note.clear();
  record->escaped.clear();
  for (const auto& line : gpuclean::output::run_summary_lines(*record)) {
    gpuclean::fuzz::check(gpuclean::fuzz::is_safe_utf8(line.text), "run summary lines are escaped");
  }
  (void)gpuclean::output::render_run_svg(*record);
  return 0;
}
