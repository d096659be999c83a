// The top library (src/top/): `gpuclean top`'s live view as a session: the terminal
// (terminal.h), collections on a thread of their own (collector.h), keys, prompts and panes, and
// explain and kill on the selected holder (kill runs as a child: child_run.h). What it shows is
// composed by output/top_view.h. It knows no flags: cli/top_command.cpp parses them and hands
// the session the settings and the hooks below.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collect/gather.h"
#include "core/duration.h"
#include "output/explain_view.h"
#include "output/status_view.h"

namespace gpuclean::top {

// A collection diagnosed with the GPUs chosen: the report, or why the choice cannot be used.
struct Diagnosed {
  std::optional<StatusReport> report;
  std::string error;  // one line, when report is empty: "no GPU 7: NVML sees 2 GPUs (0, 1)"
};

struct SessionHooks {
  // The status report of a collection with the GPUs `gpus` ("all", "0,2", "0-3"), as status
  // would make it with the command's other options.
  std::function<Diagnosed(const collect::Gathered& gathered, const std::string& gpus)> diagnose;
  // Why a GPU list typed at the `g` prompt is not one, or nullopt.
  std::function<std::optional<std::string>(const std::string& gpus)> gpu_list_error;
  // What explain says of `pid` (reads /proc for it).
  std::function<output::ExplainSubject(const StatusReport& report, Pid pid)> explain_subject;
  // After `gpuclean kill SELECTOR --dry-run|--yes`: the global options the kill child needs to
  // see what top sees.
  std::vector<std::string> kill_args;
  std::string program = "/proc/self/exe";  // the gpuclean that kills
};

struct SessionSettings {
  Duration delay{};         // between refreshes
  unsigned iterations = 0;  // quit after this many refreshes (0: never)
  std::string gpus = "all";
};

// Runs the view until quit. `first`: the collection made before the screen opened (its
// diagnosis was usable). 0 when quit (q, SIGINT, SIGTERM, SIGHUP, --iterations reached); 2 when
// the terminal cannot be taken over.
int run_session(const SessionSettings& settings, std::shared_ptr<collect::Gatherer> gatherer,
                SessionHooks hooks, collect::Gathered first);

// A child's output as pane lines. gpuclean's own output (explain, kill) is escaped already:
// escaping it again would double its backslashes. Control bytes are replaced all the same, so
// that nothing reaches the terminal raw.
std::vector<std::string> split_lines(const std::string& text);

// What a kill's exit code means, for the last line of its pane (kill --help's list).
std::string kill_outcome(int code, bool memory_verified);

}  // namespace gpuclean::top
