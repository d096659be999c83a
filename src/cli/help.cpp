#include "cli/help.h"

#include <algorithm>
#include <sstream>

#include "output/text_width.h"

namespace gpuclean::cli {

using output::display_columns;
using output::wrap_words;

namespace {

// Option names and placeholder take this many columns; the text starts after them.
constexpr std::size_t kNameColumn = 24;

// "  NAME  text…" with the text wrapped under itself; a long NAME gets the text on the next line.
void add_entry(std::ostringstream& out, const std::string& name, const std::string& text) {
  const std::string indent(2 + kNameColumn, ' ');
  std::vector<std::string> lines = wrap_words(text, kHelpWidth - indent.size());
  std::string head = "  " + name;
  if (display_columns(head) + 2 > indent.size() && !lines.empty()) {
    out << head << '\n';
    head.clear();
  }
  if (lines.empty()) lines.emplace_back();
  for (const std::string& line : lines) {
    if (head.empty()) {
      out << indent << line << '\n';
    } else {
      out << head << std::string(indent.size() - display_columns(head), ' ') << line << '\n';
      head.clear();
    }
  }
}

// "-y,--yes" or "--gpus LIST" or "PID...": the names, then the placeholder (option_text).
std::string option_label(const CLI::Option& option) {
  std::string label =
      option.get_positional() ? option.get_option_text() : option.get_name(false, true);
  if (!option.get_positional() && !option.get_option_text().empty()) {
    label += " " + option.get_option_text();
  }
  if (label.empty()) label = option.get_name();
  return label;
}

bool listed_in_help(const CLI::Option& option) {
  return !option.get_group().empty();
}

bool global_option(const CLI::Option& option) {
  return option.get_group() == kGlobalOptionsGroup;
}

// "Options:" (the command's own, help first), then the global options under their own heading;
// the top level lists them all as its own.
void add_options(std::ostringstream& out, const CLI::App& app) {
  const bool top = app.get_parent() == nullptr;
  const std::vector<const CLI::Option*> own = app.get_options([top](const CLI::Option* o) {
    return !o->get_positional() && listed_in_help(*o) && (top || !global_option(*o));
  });
  const std::vector<const CLI::Option*> globals = app.get_options(
      [top](const CLI::Option* o) { return !top && !o->get_positional() && global_option(*o); });
  out << "\nOptions:\n";
  for (const CLI::Option* option : own) {
    add_entry(out, option_label(*option), option->get_description());
  }
  if (globals.empty()) return;
  out << "\nGlobal options (also before the command):\n";
  for (const CLI::Option* option : globals) {
    add_entry(out, option_label(*option), option->get_description());
  }
}

}  // namespace

std::string HelpFormatter::make_help(const CLI::App* app, std::string name,
                                     CLI::AppFormatMode /*mode*/) const {
  std::ostringstream out;
  // The full command, "gpuclean kill", from the app's parents (CLI11's `name` varies).
  (void)name;
  std::string command = app->get_name();
  for (const CLI::App* parent = app->get_parent(); parent != nullptr;
       parent = parent->get_parent()) {
    command.insert(0, parent->get_name() + " ");
  }
  for (const std::string& line : wrap_words(app->get_description(), kHelpWidth)) {
    out << line << '\n';
  }

  const std::vector<const CLI::Option*> positionals = app->get_options(
      [](const CLI::Option* o) { return o->get_positional() && listed_in_help(*o); });
  const std::vector<const CLI::App*> commands =
      app->get_subcommands([](const CLI::App* sub) { return !sub->get_group().empty(); });

  std::string usage = "Usage: " + command;
  if (!commands.empty()) usage += " [COMMAND]";
  usage += " [OPTIONS]";
  for (const CLI::Option* positional : positionals) {
    const std::string label = option_label(*positional);
    usage += " " + (positional->get_required() ? label : "[" + label + "]");
  }
  out << '\n' << usage << '\n';

  if (!commands.empty()) {
    out << "\nCommands:\n";
    for (const CLI::App* sub : commands) add_entry(out, sub->get_name(), sub->get_description());
  }
  if (!positionals.empty()) {
    out << "\nArguments:\n";
    for (const CLI::Option* positional : positionals) {
      add_entry(out, option_label(*positional), positional->get_description());
    }
  }
  add_options(out, *app);
  std::string footer = app->get_footer();
  // A footer written by a callback comes with CLI11's '\n' joining it to the (empty) text one.
  while (!footer.empty() && footer.back() == '\n') footer.pop_back();
  if (!footer.empty()) out << '\n' << footer << '\n';
  return out.str();
}

namespace {

std::string help_footer(const std::vector<HelpExample>& examples,
                        const std::vector<std::string>& exit_codes) {
  std::ostringstream out;
  out << "Examples:\n";
  for (const HelpExample& example : examples) {
    out << "  " << example.command << '\n';
    for (const std::string& line : wrap_words(example.what, kHelpWidth - 6)) {
      out << "      " << line << '\n';
    }
  }
  // "124  --timeout": the codes in a column of their own, the meanings wrapped beside them.
  std::vector<std::pair<std::string, std::string>> codes;
  std::size_t code_width = 0;
  for (const std::string& line : exit_codes) {
    const std::size_t gap = line.find("  ");
    codes.emplace_back(line.substr(0, gap), gap == std::string::npos ? "" : line.substr(gap + 2));
    code_width = std::max(code_width, display_columns(codes.back().first));
  }
  out << "\nExit codes:";
  const std::string indent(2 + code_width + 2, ' ');
  for (const auto& [code, meaning] : codes) {
    const std::vector<std::string> lines = wrap_words(meaning, kHelpWidth - indent.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (i == 0) {
        out << "\n  " << code << std::string(code_width - display_columns(code) + 2, ' ')
            << lines[i];
      } else {
        out << '\n' << indent << lines[i];
      }
    }
  }
  return out.str();
}

}  // namespace

void set_help_footer(CLI::App& command, const std::vector<HelpExample>& examples,
                     const std::vector<std::string>& exit_codes) {
  // Written when help is shown, not at every start: wrapping every command's examples cost 13%
  // of a `gpuclean status` start's instructions (callgrind, 2026-12-06), before NVML's helper
  // could be forked.
  command.footer([examples, exit_codes] { return help_footer(examples, exit_codes); });
}

}  // namespace gpuclean::cli
