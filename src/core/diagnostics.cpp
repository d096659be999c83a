#include "core/diagnostics.h"

namespace gpuclean {

std::ostream& say(std::ostream& out, std::string_view topic) {
  out << "gpuclean: ";
  if (!topic.empty()) out << topic << ": ";
  return out;
}

std::string said(std::string_view text, std::string_view topic) {
  std::string line = "gpuclean: ";
  if (!topic.empty()) line.append(topic).append(": ");
  return line.append(text);
}

}  // namespace gpuclean
