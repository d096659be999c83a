// Usage errors in gpuclean's words. CLI11's own messages ("pids: Value -9 not in range 0.000000
// to 1797693134862315…", "The following argument was not expected: whoo") are what a newcomer
// meets first; each is rewritten here to say what was wrong, what was probably meant, and which
// `gpuclean CMD --help` to read.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/model.h"

namespace gpuclean::cli {

// Thrown by gpuclean's own argument checks (pid_check) with the whole message. It is not a
// CLI::Error, so CLI11 lets it through unchanged instead of prefixing the option's name.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A check for PID arguments (and session and process group IDs, `noun`): a whole number from
// 1 to 4194304 (the kernel's PID_MAX_LIMIT). `kill -9 PID` and `kill -s KILL PID` meet it too:
// when the word is a signal, the message says to use --signal (`signal_hint`).
CLI::Validator pid_check(bool signal_hint, const std::string& noun = "PID");

// kill's PID arguments: a PID, or PID@START where START is the process's start time in clock
// ticks since boot (field 22 of /proc/PID/stat, `start_ticks` in --json). With START the PID
// names that process only: a PID reused since START was read is another process, and nothing
// is signalled (top and the pytest plugin plan a kill before they confirm it).
struct PidSelector {
  Pid pid = 0;
  std::optional<std::uint64_t> start_ticks;
};
CLI::Validator pid_selector_check();
// nullopt when `text` is neither form (pid_selector_check says why).
std::optional<PidSelector> parse_pid_selector(const std::string& text);

// A whole number from `lo` to `hi` ("'abc' is not a whole number from 1 to 256").
CLI::Validator whole_number_check(unsigned long lo, unsigned long hi);
// A number of MiB, 0 or more, fractions allowed.
CLI::Validator mib_check();
// A Slurm job ID (digits) and a container ID prefix (hex): diagnose/owner_match.h's rules.
CLI::Validator job_id_check();
CLI::Validator container_id_check();

// The lines to print for a failed parse of `args` (argv without argv[0]): "gpuclean: CMD: what
// was wrong" and "Run `gpuclean CMD --help` for ..." naming the command being parsed.
std::string usage_message(const CLI::App& app, const CLI::ParseError& error,
                          const std::vector<std::string>& args);
// The same for a UsageError or any message of gpuclean's own about `command` ("" for none).
std::string usage_message(const std::string& command, const std::string& what);

// The name in `candidates` closest to `word` (a typo or a prefix away), or "" when none is.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

// `gpuclean help` → `gpuclean --help`; `gpuclean help kill` → `gpuclean kill --help`.
std::vector<std::string> expand_help_command(std::vector<std::string> args);

// `gpuclean help nosuch` and `gpuclean nosuch --help`: CLI11 answers the help flag before it
// looks at the word, so the word is checked first. The usage error's text, or "" when `args`
// does not start with an unknown command word and ask for help.
std::string unknown_command_asking_help(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace gpuclean::cli
