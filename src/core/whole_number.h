// The whole of a text as an integer: what /proc's numbers, PIDs on the command line and the GPU
// indexes of gpuclean's own documents are read with.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>

namespace gpuclean {

// nullopt when `text` is empty, holds anything but the number (a sign only where T has one) or
// names a value out of T's range.
template <typename T>
std::optional<T> whole_number(std::string_view text, int base = 10) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, base);
  if (text.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

}  // namespace gpuclean
