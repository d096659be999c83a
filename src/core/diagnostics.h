// The one place that spells how gpuclean speaks of itself: every line it writes about its own
// work (an error, a warning, what it did) starts "gpuclean: ", and "gpuclean: TOPIC: " when it
// is one command's or one kind's ("gpuclean: kill: …", "gpuclean: warning: …"), so that its words
// stand out from a workload's on a shared stderr and a script can find them.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace gpuclean {

// Writes the prefix and returns `out` for the message: say(io.err, "kill") << "…\n".
std::ostream& say(std::ostream& out, std::string_view topic = {});

// The prefix and `text` as one string, for a line that is built before it is written.
std::string said(std::string_view text, std::string_view topic = {});

}  // namespace gpuclean
