// `--help` in gpuclean's words: at most 80 columns whatever the terminal, one placeholder per
// option value (PID, DURATION — never CLI11's type names such as UINT:UINT in [1 - 256]),
// defaults said one way, "(default: X)", in the option's text, and every command's help ending
// with a few examples and its exit codes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace gpuclean::cli {

inline constexpr std::size_t kHelpWidth = 80;

// The group of the options every command shares (cli/command_line.h's add_common_options): a
// command's help lists its own options first and these after, under their own heading (as git
// and kubectl do); the top level's help, whose options they all are, lists them as its own.
inline constexpr const char* kGlobalOptionsGroup = "Global options";

// Formats every help page of an app (set it on the top-level app; subcommands inherit it).
class HelpFormatter : public CLI::FormatterBase {
 public:
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override;
};

struct HelpExample {
  std::string command;  // "gpuclean kill 4242"
  std::string what;     // "4242 and its descendants, after asking"
};

// Ends `command`'s help with these examples and its exit codes, one "N  meaning" each.
void set_help_footer(CLI::App& command, const std::vector<HelpExample>& examples,
                     const std::vector<std::string>& exit_codes);

}  // namespace gpuclean::cli
