// `gpuclean top`: the live view as lines of styled text, for a terminal of any size. Pure: the
// screen is composed here from the diagnosis and the view's state, and painted by
// cli/top_terminal (ncurses), so what it shows is tested without a terminal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "output/status_view.h"

namespace gpuclean::output {

// How a piece of the screen is drawn. Colours are dropped under NO_COLOR (the painter's
// choice); kSelected and kBold are attributes, not colours, and stay.
enum class Style { kNormal, kDim, kBold, kSelected, kRed, kGreen, kYellow };

struct Segment {
  std::string text;  // already escaped for the terminal; no newline
  Style style = Style::kNormal;
};
using ScreenLine = std::vector<Segment>;

// One GPU's used memory (or utilisation) over the last minute, sampled at each refresh.
class MemoryHistory {
 public:
  static constexpr double kSeconds = 60;
  enum class Series { kMemory, kUtilization };
  struct Sample {
    double time = 0;      // seconds since the epoch
    double fraction = 0;  // used / total
  };
  // The GPUs' used memory at `time`; samples older than kSeconds are dropped.
  void add(double time, const std::vector<GpuReport>& gpus, Series series = Series::kMemory);
  [[nodiscard]] const std::deque<Sample>* of(unsigned gpu) const;

 private:
  std::map<unsigned, std::deque<Sample>> samples_;
};

// The last `kSeconds` as `width` cells, oldest left: each cell the highest fraction in its
// time slice, in eight levels ("▁▂▃▄▅▆▇█"; ASCII "_.:-=+*#" without UTF-8); blank where no
// sample falls.
std::string sparkline(const std::deque<MemoryHistory::Sample>& samples, double now, int width,
                      bool unicode);

// `s` cycles through them in this order.
enum class TopSort { kMemory, kGpu, kCpu, kRss, kAge, kPid };
const char* to_string(TopSort sort);
TopSort next(TopSort sort);

struct TopRow {
  const Holder* holder = nullptr;
  int depth = 0;  // tree view: depth below its nearest holder ancestor
};

// Host CPU use per process (PID and start ticks), percent of one core since the last refresh.
using CpuPercent = std::map<std::pair<Pid, std::uint64_t>, double>;

// The holder rows as listed: those matching `filter` (case-insensitive, in PID, user, class or
// command), sorted by `sort` (kCpu by `cpu`); with `tree`, children under their parent holder,
// siblings sorted.
std::vector<TopRow> top_rows(const Diagnosis& diagnosis, TopSort sort, bool tree,
                             const std::string& filter, const CpuPercent* cpu = nullptr);

// A pane over the holder table: explain, the kill plan and outcome, help.
struct TopPane {
  std::string title;
  std::vector<std::string> lines;  // escaped text
  std::size_t scroll = 0;          // first line shown
  std::string keys;                // the footer while the pane is open
};

struct TopViewState {
  TopSort sort = TopSort::kMemory;
  bool tree = true;
  bool problems_open = false;  // `p`: every problem with its fix, not the one-line summary
  std::string filter;
  std::optional<Pid> selected;  // the selected holder, kept by PID across refreshes
  std::size_t scroll = 0;       // first holder row shown
  std::optional<TopPane> pane;
  std::string prompt;   // a line being typed ("/ filter: abc"), shown in the footer
  std::string message;  // a one-off note in the footer ("no GPU 5")
};

struct TopFrame {
  const StatusReport* report = nullptr;  // nullptr: nothing collected yet
  const MemoryHistory* history = nullptr;
  double now = 0;            // seconds since the epoch
  double delay_seconds = 1;  // the refresh interval
  std::string refresh_note;  // e.g. "refreshing for 6 s" while a collection is overdue
  bool unicode = true;       // the terminal's locale is UTF-8
  const MemoryHistory* utilization = nullptr;  // the sparkline's other series (`u` switches)
  bool show_utilization = false;               // the sparkline shows utilisation, not memory
  const CpuPercent* cpu = nullptr;             // nullptr before a second refresh
  Bytes page_size = 4096;                      // RSS is counted in pages
};

struct TopScreen {
  std::vector<ScreenLine> lines;  // exactly `height` lines, none wider than `width` columns
  std::vector<TopRow> rows;       // every row of the table (also those scrolled away)
  std::size_t table_height = 0;   // how many rows fit
  // The state as drawn: the selection kept (or the first row), the table scrolled so that it
  // shows, an open pane not scrolled past its end. The session takes it back as its state
  // (TopSession::refresh); the view itself changes nothing it is given.
  TopViewState drawn;
};

// Composes the screen of `state`; where the selection and scrolling ended up is the screen's
// `drawn` state.
TopScreen compose_top(const TopFrame& frame, const TopViewState& state, int width, int height);

// The GPUs NVML attributes a holder's memory to, as the table's GPU column shows them: "0",
// "0,1", "0-3" (three or more in a row); "-" when none is known.
std::string gpu_cell(const Holder& holder);

// The key help of `?`, as pane lines.
std::vector<std::string> top_help_lines();

// The line about NVML for the header, or empty when it answered: "NVML not answering: …" for
// a timeout (the driver may be hung), "NVML failed: …" otherwise.
std::string nvml_status_line(const StatusReport& report);

}  // namespace gpuclean::output
