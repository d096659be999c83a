// `gpuclean who`: the holders of a set of files, as text (like a well-made `fuser -v`) or JSON.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/model.h"

namespace gpuclean::output {

struct WhoReport {
  std::string host;
  double time = 0;                // seconds since the epoch
  std::vector<DeviceFile> files;  // the selection that was scanned
  std::vector<Holder> holders;    // ascending by pid
  // `who --pid`: the processes named (thread-group leaders; a thread's ID is dropped), the
  // only ones scanned. nullopt: every process.
  std::optional<std::vector<Pid>> named_pids;
  ScanStats stats;
  // What the scan could not read (diagnose/unseen.h): with `unseen_decides`, no holder seen
  // is not "nobody holds them" (verdict unknown).
  std::string unseen_message;
  bool unseen_decides = false;
};

// Sections per held file, a row per holder: USER PID STATE ACCESS CLASS COMMAND. Files nobody
// holds are not listed. Ends with one summary line.
void render_who_text(std::ostream& out, const WhoReport& report);

void render_who_json(std::ostream& out, const WhoReport& report);

// "clean", "dirty" or "unknown" (no holder seen, but unread processes could hold the files).
const char* who_verdict(const WhoReport& report);

// What could not be read, or empty when everything was: the locked memory maps (one line) and
// `unseen_message` (diagnose/unseen.h), each line starting "gpuclean: ".
std::string unreadable_summary(const ScanStats& stats, const std::string& unseen_message);

// "Sl": leader state, plus 'l' when the group has more than one thread (as ps prints it).
std::string state_label(const ProcessInfo& process);

// The COMMAND column of the tables (who, status, top, kill's plan): the argv with argv[0] cut to
// its basename, since `python3 serve.py` is what identifies a job and an interpreter's path
// (/root/.pyenv/versions/3.11.9/bin/python3) only fills the column; "[comm]" when argv is empty
// (kernel threads, zombie leaders); escaped for the terminal.
std::string command_label(const ProcessInfo& process, std::size_t max_bytes = 200);
// The whole argv as run, argv[0]'s path included (explain), or "[comm]"; escaped.
std::string full_command_label(const ProcessInfo& process, std::size_t max_bytes = 400);

}  // namespace gpuclean::output
