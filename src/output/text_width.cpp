#include "output/text_width.h"

#include <algorithm>
#include <sstream>

namespace gpuclean::output {

namespace {

bool continuation_byte(char c) {
  return (static_cast<unsigned char>(c) & 0xC0U) == 0x80U;
}

}  // namespace

std::size_t display_columns(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return !continuation_byte(c); }));
}

std::string cut_to_columns(std::string_view text, std::size_t width) {
  if (display_columns(text) <= width) return std::string(text);
  if (width == 0) return {};
  // Keep width - 1 code points, then the ellipsis.
  std::size_t kept = 0;
  std::size_t end = 0;
  while (end < text.size()) {
    if (!continuation_byte(text[end])) {
      if (kept == width - 1) break;
      ++kept;
    }
    ++end;
  }
  return std::string(text.substr(0, end)) + "…";
}

std::vector<std::string> wrap_words(std::string_view text, std::size_t width) {
  std::vector<std::string> lines;
  std::istringstream words{std::string(text)};
  std::string word;
  std::string line;
  while (words >> word) {
    if (!line.empty() && display_columns(line) + 1 + display_columns(word) > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

}  // namespace gpuclean::output
