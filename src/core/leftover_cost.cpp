#include "core/leftover_cost.h"

#include <algorithm>
#include <array>

namespace gpuclean {

bool is_leftover_class(std::string_view klass) {
  return std::find(std::begin(kLeftoverClasses), std::end(kLeftoverClasses), klass) !=
         std::end(kLeftoverClasses);
}

std::string owner_kind_of(std::string_view recorded_owner) {
  if (recorded_owner.empty()) return "none";
  const std::string_view kind = recorded_owner.substr(0, recorded_owner.find(':'));
  // Only the kinds gpuclean writes: a label's values stay a bounded set whatever the row says.
  const auto known = owner_kind_from_string(kind);
  return known ? to_string(*known) : "cgroup";
}

namespace {

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Programs that run a script named by their first argument that is no option.
bool is_interpreter(const std::string& name) {
  static constexpr std::array<std::string_view, 7> kInterpreters = {"python", "bash", "sh",  "node",
                                                                    "perl",   "ruby", "dash"};
  return std::any_of(kInterpreters.begin(), kInterpreters.end(), [&name](std::string_view i) {
    // python3, python3.11: the interpreter with its version.
    return name == i || (name.starts_with(i) && i == "python" &&
                         name.find_first_not_of("0123456789.", i.size()) == std::string::npos);
  });
}

}  // namespace

std::string command_name(const std::vector<std::string>& argv) {
  if (argv.empty()) return "(no command line)";
  std::string program = base_name(argv[0]);
  if (!is_interpreter(program)) return program;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "-c") return program.append(" -c");
    if (arg == "-m" && i + 1 < argv.size()) return program.append(" -m ").append(argv[i + 1]);
    if (!arg.empty() && arg[0] != '-') return program.append(" ").append(base_name(arg));
  }
  return program;
}

const char* to_string(CostGrouping grouping) {
  switch (grouping) {
    case CostGrouping::kUser:
      return "user";
    case CostGrouping::kOwner:
      return "owner";
    case CostGrouping::kCommand:
      return "command";
    case CostGrouping::kGpu:
      return "gpu";
  }
  return "user";
}

std::optional<CostGrouping> cost_grouping_from_string(std::string_view text) {
  for (CostGrouping g :
       {CostGrouping::kUser, CostGrouping::kOwner, CostGrouping::kCommand, CostGrouping::kGpu}) {
    if (text == to_string(g)) return g;
  }
  return std::nullopt;
}

}  // namespace gpuclean
