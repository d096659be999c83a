#include "cli/plot_command.h"

#include <ostream>

#include "core/atomic_file.h"
#include "core/input_file.h"
#include "output/escape.h"
#include "output/run_plot.h"
#include "output/run_record.h"

namespace gpuclean::cli {
namespace {

// A record samples once per --sample-interval: a week at 1 s is ~60 MiB of JSON.
constexpr std::size_t kMaxRecordBytes = std::size_t{256} << 20;

}  // namespace

int run_plot(const PlotOptions& o, const Io& io, bool stdout_is_terminal) {
  if (o.output_path.empty() && stdout_is_terminal) {
    io.err << "gpuclean: plot: not writing SVG onto a terminal; give -o FILE.svg or redirect "
              "stdout (gpuclean plot RECORD > FILE.svg)\n";
    return kExitUsage;
  }
  const std::string shown = output::escape_terminal(o.record_path);
  auto text = read_input_file(o.record_path, kMaxRecordBytes);  // a regular file; never blocks
  if (!text.ok()) {
    io.err << "gpuclean: plot: " << output::escape_terminal(text.error().message()) << '\n';
    return kExitUsage;
  }
  auto record = output::parse_run_record(*text);
  if (!record.ok()) {
    io.err << "gpuclean: plot: " << shown << ": " << record.error().context << '\n';
    return kExitUsage;
  }
  const std::string svg = output::render_run_svg(*record);
  if (o.output_path.empty()) {
    io.out << svg;
    return kExitClean;
  }
  // Atomically, through the one writer of every output file (core/atomic_file.h): a link
  // planted at the name is replaced, never followed.
  if (Status written = write_file_atomically(o.output_path, svg); !written.ok()) {
    io.err << "gpuclean: plot: cannot write " << output::escape_terminal(o.output_path) << " ("
           << output::escape_terminal(written.error().message()) << ")\n";
    return kExitRuntime;
  }
  return kExitClean;
}

}  // namespace gpuclean::cli
