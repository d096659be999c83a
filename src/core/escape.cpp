#include "core/escape.h"

#include <algorithm>
#include <iterator>
#include <limits>

namespace gpuclean {
namespace {

struct CodePointRange {
  std::uint32_t first;
  std::uint32_t last;
};

// Unicode's general categories Cc, Cf, Zl, Zp and Zs less U+0020: sorted, disjoint ranges.
constexpr CodePointRange kInvisible[] = {
#include "core/unicode_invisible.inc"
};

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

// Appends `value` in lower-case hexadecimal, at least `digits` digits (core has no fmt).
void append_hex(std::string& out, std::uint32_t value, std::size_t digits) {
  constexpr char kDigits[] = "0123456789abcdef";
  char reversed[8] = {};
  std::size_t n = 0;
  do {
    reversed[n++] = kDigits[value & 0xFU];
    value >>= 4U;
  } while (value != 0 || n < digits);
  while (n > 0) out += reversed[--n];
}

// Appends the character (or invalid byte) of `text` at `i` as escape_terminal shows it, and
// returns how many bytes of `text` it took.
std::size_t append_escaped(std::string& out, std::string_view text, std::size_t i) {
  std::uint32_t cp = 0;
  const std::size_t length = utf8_sequence(text, i, cp);
  if (length == 0) {
    out += "\\x";
    append_hex(out, static_cast<unsigned char>(text[i]), 2);
    return 1;
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
    out += "\\x";
    append_hex(out, cp, 2);
  } else if (is_invisible_or_separator(cp)) {
    out += "\\u{";
    append_hex(out, cp, 4);
    out += '}';
  } else {
    out.append(text.substr(i, length));
  }
  return length;
}

// One argument as display_argv shows it before escaping: bare unless that would blur where it
// begins or ends. A quote inside quotes is doubled, not backslashed: the escaping that comes
// after would double the backslash.
void append_display_word(std::string& out, const std::string& arg) {
  if (!arg.empty() && arg.front() != '\'' && arg.find(' ') == std::string::npos) {
    out += arg;
    return;
  }
  out += '\'';
  for (char c : arg) out += c == '\'' ? std::string_view("''") : std::string_view(&c, 1);
  out += '\'';
}

}  // namespace

bool is_invisible_or_separator(std::uint32_t code_point) {
  if (code_point >= 0x21 && code_point < 0x7F) return false;  // visible ASCII: no search
  // The first range that ends at or after the code point holds it, if any does.
  const CodePointRange* range =
      std::lower_bound(std::begin(kInvisible), std::end(kInvisible), code_point,
                       [](const CodePointRange& r, std::uint32_t cp) { return r.last < cp; });
  return range != std::end(kInvisible) && range->first <= code_point;
}

std::string escape_terminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) i += append_escaped(out, text, i);
  return out;
}

std::string cut_for_display(std::string_view text, std::size_t max_chars) {
  std::string unit;
  std::size_t shown = 0;  // characters escape_terminal shows for text[0, i)
  std::size_t keep = 0;   // the longest prefix that leaves room for "…"
  for (std::size_t i = 0; i < text.size();) {
    unit.clear();
    i += append_escaped(unit, text, i);
    // Characters, not bytes: a character passed through is one, of 1 to 4 bytes.
    shown += static_cast<std::size_t>(std::count_if(unit.begin(), unit.end(), [](char c) {
      return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
    if (shown < max_chars) keep = i;
    if (shown > max_chars) return std::string(text.substr(0, keep)) + "…";
  }
  return std::string(text);
}

std::string display_argv(const std::vector<std::string>& argv, std::size_t max_chars) {
  // A character shown takes at most 4 bytes: past 4 × max_chars the cut is decided, and a
  // 1 MiB command line is not joined whole for a 60-character column.
  const std::size_t enough = max_chars > std::numeric_limits<std::size_t>::max() / 4
                                 ? std::numeric_limits<std::size_t>::max()
                                 : 4 * max_chars;
  std::string text;
  for (const std::string& arg : argv) {
    if (text.size() > enough) break;
    if (!text.empty()) text += ' ';  // every word shown is at least one character
    append_display_word(text, arg);
  }
  return escape_terminal(cut_for_display(text, max_chars));
}

std::string bracketed_name(std::string_view comm) {
  return "[" + std::string(comm) + "]";
}

std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("/._-+:@,=").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace gpuclean
