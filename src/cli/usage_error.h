// Usage errors in gpuclean's words. CLI11's own messages ("pids: Value -9 not in range 0.000000
// to 1797693134862315…", "The following argument was not expected: whoo") are what a newcomer
// meets first; each is rewritten here to say what was wrong, what was probably meant, and which
// `gpuclean CMD --help` to read. What was wrong comes from the error's type and what the parser
// holds, never from CLI11's words, which change between its versions (issue 51).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace gpuclean::cli {

// Thrown by gpuclean's own argument checks (pid_check) with the whole message. It is not a
// CLI::Error, so CLI11 lets it through unchanged instead of prefixing the option's name.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// kill's PID arguments: a PID, or PID@START where START is the process's start time in clock
// ticks since boot (field 22 of /proc/PID/stat, `start_ticks` in --json). With START the PID
// names that process only: a PID reused since START was read is another process, and nothing
// is signalled (top and the pytest plugin plan a kill before they confirm it).
struct PidSelector {
  Pid pid = 0;
  std::optional<std::uint64_t> start_ticks;
};
// nullopt when `text` is neither form (pid_selector_check says why).
std::optional<PidSelector> parse_pid_selector(const std::string& text);

// A list of PID arguments (kill's, who --pid's): the PIDs in the order given, and the start
// time of each given as PID@START.
struct PidSelectors {
  std::vector<Pid> pids;
  std::map<Pid, std::uint64_t> start_ticks;
};
// The usage error's text when an argument is neither form or a PID comes with two start times.
Result<PidSelectors> parse_pid_selectors(const std::vector<std::string>& texts);

// The lines to print for a UsageError or any message of gpuclean's own about `command` (""
// for none): "gpuclean: CMD: what was wrong" and which `gpuclean CMD --help` to read.
std::string usage_message(const std::string& command, const std::string& what);

// The name in `candidates` closest to `word` (a typo or a prefix away), or "" when none is.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

// `gpuclean help` → `gpuclean --help`; `gpuclean help kill` → `gpuclean kill --help`.
std::vector<std::string> expand_help_command(std::vector<std::string> args);

}  // namespace gpuclean::cli
