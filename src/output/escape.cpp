#include "output/escape.h"

#include <cstdint>

#include <fmt/format.h>

namespace gpuclean::output {
namespace {

// Length of the valid UTF-8 sequence starting at text[i] (and its code point), or 0.
std::size_t utf8_sequence(std::string_view text, std::size_t i, std::uint32_t& code_point) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  std::uint32_t min = 0;
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  }
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code_point = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code_point = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code_point = lead & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
  if (code_point < min || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    return 0;
  }
  return length;
}

bool is_bidi_control(std::uint32_t cp) {
  return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E ||
         cp == 0x200F || cp == 0x061C;
}

}  // namespace

std::string escape_terminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    std::uint32_t cp = 0;
    const std::size_t length = utf8_sequence(text, i, cp);
    if (length == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == 0x1B) {
      out += "\\e";
    } else if (cp < 0x20 || cp == 0x7F) {
      out += fmt::format("\\x{:02x}", cp);
    } else if ((cp >= 0x80 && cp <= 0x9F) || is_bidi_control(cp)) {  // C1 (CSI is U+009B)
      out += fmt::format("\\u{{{:04x}}}", cp);
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

std::string display_command(const std::vector<std::string>& argv, std::size_t max_bytes) {
  std::string out;
  for (const std::string& arg : argv) {
    if (!out.empty()) out += ' ';
    std::string escaped = escape_terminal(arg);
    if (arg.empty() || arg.find(' ') != std::string::npos) escaped = fmt::format("'{}'", escaped);
    out += escaped;
    if (out.size() > max_bytes) break;
  }
  if (out.size() > max_bytes) {
    // Cut on a UTF-8 boundary: escaped text is valid UTF-8, continuation bytes are 10xxxxxx.
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += "…";
  }
  return out;
}

}  // namespace gpuclean::output
