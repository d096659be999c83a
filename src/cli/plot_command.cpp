#include "cli/plot_command.h"

#include <fcntl.h>

#include <fstream>
#include <ostream>

#include "output/escape.h"
#include "output/run_plot.h"
#include "output/run_record.h"
#include "procfs/proc_fs.h"

namespace gpuclean::cli {
namespace {

// A record samples once per --sample-interval: a week at 1 s is ~60 MiB of JSON.
constexpr std::size_t kMaxRecordBytes = std::size_t{256} << 20;

}  // namespace

void add_plot_command(CLI::App& app, PlotOptions& o) {
  CLI::App* plot = app.add_subcommand("plot", "Draw a run record (gpuclean run --record) as SVG");
  plot->add_option("record", o.record_path, "The record file")->required();
  plot->add_option("-o,--output", o.output_path, "Write the SVG here (default: stdout)");
}

int run_plot(const PlotOptions& o, const Io& io) {
  const std::string shown = output::escape_terminal(o.record_path);
  std::string text;
  if (!procfs::read_file_at(AT_FDCWD, o.record_path.c_str(), text, kMaxRecordBytes)) {
    io.err << "gpuclean: plot: " << errno_error(shown).message() << '\n';
    return kExitUsage;
  }
  auto record = output::parse_run_record(text);
  if (!record.ok()) {
    io.err << "gpuclean: plot: " << shown << ": " << record.error().context << '\n';
    return kExitUsage;
  }
  const std::string svg = output::render_run_svg(*record);
  if (o.output_path.empty()) {
    io.out << svg;
    return kExitClean;
  }
  std::ofstream file(o.output_path, std::ios::binary | std::ios::trunc);
  file << svg;
  file.close();
  if (!file) {
    io.err << "gpuclean: plot: cannot write " << output::escape_terminal(o.output_path) << '\n';
    return kExitRuntime;
  }
  return kExitClean;
}

}  // namespace gpuclean::cli
