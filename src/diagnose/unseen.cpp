#include "diagnose/unseen.h"

#include <vector>

namespace gpuclean::diagnose {
namespace {

std::string count_text(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " process" : " processes");
}

// "pids 1, 2, …" from the sample, with an ellipsis when there were more.
std::string sample_text(const std::vector<Pid>& sample, std::size_t total) {
  std::string text = sample.size() == 1 ? "pid " : "pids ";
  for (std::size_t i = 0; i < sample.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(sample[i]);
  }
  if (total > sample.size()) text += ", …";
  return text;
}

}  // namespace

Unseen unseen_processes(const ScanStats& stats, bool memory_from_nvml) {
  Unseen out;
  std::vector<std::string> parts;
  bool decides = false;
  if (stats.incomplete > 0) {
    parts.push_back(count_text(stats.incomplete) +
                    " could not be read completely (their memory maps or descriptors did not "
                    "answer in time: " +
                    sample_text(stats.incomplete_pids, stats.incomplete) +
                    "); what they hold is not known");
    decides = true;
  }
  if (stats.denied > 0 && !stats.may_read_all) {
    const bool all_others = stats.denied_other_users == stats.denied;
    // Root without CAP_SYS_PTRACE is refused other users' descriptors as any user is.
    const std::string remedy =
        stats.as_root ? "this root lacks CAP_SYS_PTRACE (a container's default capabilities drop "
                        "it: add it, e.g. docker run --cap-add SYS_PTRACE)"
                      : "run as root";
    parts.push_back(count_text(stats.denied) + (all_others ? " of other users" : "") +
                    " could not be read (" + sample_text(stats.denied_pids, stats.denied) +
                    "): " + remedy);
    decides = true;
  } else if (stats.denied > 0) {
    parts.push_back(count_text(stats.denied) +
                    " could not be read even as root (permission denied: " +
                    sample_text(stats.denied_pids, stats.denied) +
                    "; a supervisor more privileged than this namespace's root); their files are "
                    "unknown");
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out.message += (i == 0 ? "" : "; ") + parts[i];
  }
  out.decides = decides && !memory_from_nvml;
  return out;
}

}  // namespace gpuclean::diagnose
