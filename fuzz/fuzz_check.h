// Helpers shared by the libFuzzer targets in this folder: a property check that aborts (so
// libFuzzer records the input as a crash) and a strict UTF-8 decoder for the escaping targets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/escape.h"

namespace gpuclean::fuzz {

// A violated property is a finding like a crash: print what broke and abort.
inline void check(bool ok, const char* property) {
  if (ok) return;
  std::fprintf(stderr, "fuzz property violated: %s\n", property);
  std::abort();
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// True when `text` is valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF)
// and holds no code point a terminal acts on or draws as nothing, a blank or a line break: C0
// controls, DEL, C1 controls, the bidirectional overrides (U+202A–U+202E, U+2066–U+2069), and
// every code point of Unicode's categories Cc, Cf, Zl, Zp and Zs but the ASCII space, which
// core/escape.h promises to escape (its generated table).
inline bool is_safe_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    std::uint32_t cp = 0;
    std::size_t length = 0;
    if (byte < 0x80) {
      cp = byte;
      length = 1;
    } else if ((byte & 0xE0) == 0xC0) {
      cp = byte & 0x1Fu;
      length = 2;
    } else if ((byte & 0xF0) == 0xE0) {
      cp = byte & 0x0Fu;
      length = 3;
    } else if ((byte & 0xF8) == 0xF0) {
      cp = byte & 0x07u;
      length = 4;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (next & 0x3Fu);
    }
    constexpr std::uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinimum[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) return false;
    if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) return false;
    if (gpuclean::is_invisible_or_separator(cp)) return false;
    i += length;
  }
  return true;
}

}  // namespace gpuclean::fuzz
