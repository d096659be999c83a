// `gpuclean history`: the recorder's events as a timeline (one line each, or JSON), and who
// held each GPU at a moment (--at). Every command line and name in them is untrusted text,
// escaped before a terminal sees it.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/history_event.h"
#include "core/run_record.h"

namespace gpuclean::output {

// A process at a moment, as history --at shows it (history::HeldAt without the store).
struct HistoryHolder {
  RecordedProcess process;
  std::string klass;
  std::map<unsigned, Bytes> gpu_memory;
};

// "python serve.py --tp 8": core's display_argv, or "?" for a process recorded without argv.
std::string argv_text(const std::vector<std::string>& argv, std::size_t max_chars = 120);

// A recorded process as `history --json` gives it: {pid, start_ticks, boot_id, user, argv,
// owner, parent}.
nlohmann::json recorded_process_json(const RecordedProcess& process);

// "slurm job 4242", "gpuclean run 77", or the stored owner as it is.
std::string recorded_owner_text(const std::string& owner);

// How a timeline is written.
enum class TimelineFormat {
  kText,       // a line per event, memory changes folded (TimelineOptions::every_memory_change)
  kJson,       // one document, {"schema": 1, "events": [...]}, an event per line
  kJsonLines,  // an event's JSON object per line and nothing else (history --follow --json)
};

struct TimelineOptions {
  TimelineFormat format = TimelineFormat::kText;
  // Text: every memory_changed line. Otherwise a holder's first change on a GPU is a line and
  // the rest fold into one line when it leaves (or the timeline ends): how many, the peak and
  // the last figure. 93 of 141 lines of a two-minute history were one process's changes.
  bool every_memory_change = false;
  // Text: the columns a line may take (a terminal's width); longer lines end in "…".
  std::size_t width = std::size_t{1} << 16;
};

// A timeline written as its events come (a day of a busy node is 100,000 events: never all
// held at once). Each text line names a parent's command the first time only.
class TimelineWriter {
 public:
  TimelineWriter(std::ostream& out, TimelineOptions options);
  TimelineWriter(const TimelineWriter&) = delete;
  TimelineWriter& operator=(const TimelineWriter&) = delete;
  ~TimelineWriter();
  void write(const HistoryEvent& event);
  // What is written so far, out to the stream (history --follow, between reads); folded
  // memory changes stay folded.
  void flush();
  // The folded memory changes still open, the document's end (JSON), or the line that says
  // nothing matched (text).
  void finish();

  struct Cache;

 private:
  void put_line(const std::string& line);

  std::ostream& out_;
  TimelineOptions options_;
  std::size_t written_ = 0;
  static constexpr std::size_t kFlushBytes = std::size_t{64} * 1024;
  std::string buffer_;
  std::unique_ptr<Cache> cache_;
};
// A timeline as a run record, the memory and marks of plot --history (output/history_plot.h): per
// GPU, the memory the recorded holders held (from who held what at `since`, then each
// memory_changed and left) plus the unattributed memory recorded, stepped at each change;
// actions, Xids and NVML failures as labelled marks. Times are seconds since `since`.
RunRecord history_as_record(const std::vector<HistoryHolder>& at_since,
                            const std::vector<HistoryEvent>& events, double since, double until);

void render_held_at_text(std::ostream& out, double time, const std::vector<HistoryHolder>& held);
void render_held_at_json(std::ostream& out, double time, const std::vector<HistoryHolder>& held);

}  // namespace gpuclean::output
