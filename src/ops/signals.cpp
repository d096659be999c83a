#include "ops/signals.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <csignal>
#include <utility>

#include "core/whole_number.h"

namespace gpuclean::ops {
namespace {

constexpr std::array<std::pair<const char*, int>, 14> kSignals{{
    {"HUP", SIGHUP},
    {"INT", SIGINT},
    {"QUIT", SIGQUIT},
    {"KILL", SIGKILL},
    {"USR1", SIGUSR1},
    {"USR2", SIGUSR2},
    {"TERM", SIGTERM},
    {"CONT", SIGCONT},
    {"STOP", SIGSTOP},
    {"ALRM", SIGALRM},
    {"ABRT", SIGABRT},
    {"PIPE", SIGPIPE},
    {"TSTP", SIGTSTP},
    {"XCPU", SIGXCPU},
}};

}  // namespace

Result<int> parse_signal(std::string_view text) {
  std::string name(text);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  if (const auto number = whole_number<int>(name)) {
    if (*number >= 1 && *number < NSIG) return *number;
    return Error{0, "'" + std::string(text) + "' is not a signal number (1-" +
                        std::to_string(NSIG - 1) + ")"};
  }
  for (const auto& [signal_text, signo] : kSignals) {
    if (name == signal_text) return signo;
  }
  return Error{
      0, "'" + std::string(text) + "' is not a signal (use TERM, INT, HUP, KILL, … or a number)"};
}

std::string signal_name(int signo) {
  for (const auto& [signal_text, number] : kSignals) {
    if (number == signo) return signal_text;
  }
  return std::to_string(signo);
}

std::vector<std::string> signal_names() {
  std::vector<std::string> names;
  names.reserve(kSignals.size());
  for (const auto& entry : kSignals) names.emplace_back(entry.first);
  return names;
}

}  // namespace gpuclean::ops
