// The CLI11 side of usage errors (cli/usage_error.h has the rest): the checks the parser runs
// on option values, and the parse errors CLI11 throws rewritten in gpuclean's words. Only the
// files that build the parser include this (cli/command_line.h says why).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/usage_error.h"

namespace gpuclean::cli {

// A check for PID arguments (and session and process group IDs, `noun`): a whole number from
// 1 to 4194304 (the kernel's PID_MAX_LIMIT). `kill -9 PID` and `kill -s KILL PID` meet it too:
// when the word is a signal, the message says to use --signal (`signal_hint`).
CLI::Validator pid_check(bool signal_hint, const std::string& noun = "PID");

// kill's PID arguments: PID or PID@START (parse_pid_selector in cli/usage_error.h).
CLI::Validator pid_selector_check();

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

// `gpuclean help nosuch` and `gpuclean nosuch --help`: CLI11 answers the help flag before it
// looks at the word, so the word is checked first. The usage error's text, or "" when `args`
// does not start with an unknown command word and ask for help.
std::string unknown_command_asking_help(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace gpuclean::cli
