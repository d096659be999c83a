// The NSpid line of /proc/PID/status alone, embedded in a realistic status file so the fuzzer
// spends its time on the list of namespace PIDs rather than on finding the key.
#include <algorithm>
#include <charconv>
#include <set>
#include <string>

#include "fuzz_check.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuclean::fuzz::check;
  const std::string_view value = gpuclean::fuzz::as_text(data, size);
  std::string text = "Name:\tpython\nUid:\t1000\t1000\t1000\t1000\nNSpid:\t";
  text.append(value);
  text += "\nNSpgid:\t7\t1\n";
  const auto status = gpuclean::procfs::parse_status(text);
  check(status.euid == 1000u || value.find('\n') != std::string_view::npos,
        "the Uid line before NSpid is still read");
  check(status.nspid.size() <= size / 2 + 1, "NSpid count bounded by input");
  // Every entry is the value of a word of the input (from_chars reads "-0212" as -212, so the
  // words are compared by value, not by text). Words end at blanks and at ':' (a "\nNSpid:5" in
  // the input starts a line of its own).
  std::set<gpuclean::Pid> words;
  std::size_t at = 0;
  while (at <= value.size()) {
    const std::size_t end = std::min(value.find_first_of(" \t\n:", at), value.size());
    gpuclean::Pid pid = 0;
    const char* first = value.data() + at;
    const char* last = value.data() + end;
    if (auto [ptr, ec] = std::from_chars(first, last, pid); ec == std::errc{} && ptr == last) {
      words.insert(pid);
    }
    at = end + 1;
  }
  for (const auto pid : status.nspid) {
    check(words.count(pid) == 1, "every NSpid entry is the value of a word of the input");
  }
  return 0;
}
