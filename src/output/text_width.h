// Lines that fit a terminal: gpuclean's live lines and status screen are cut or wrapped to the
// terminal's width (an 80-column terminal must never see a line wrap and scroll), and its help
// is always 80 columns.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpuclean::output {

// Columns `text` takes: one per UTF-8 code point (what gpuclean prints is escaped text and
// its own box characters; East Asian wide characters count one, a known undercount).
std::size_t display_columns(std::string_view text);

// `text` cut to at most `width` columns, ending in "…" when something was cut; never inside a
// UTF-8 sequence.
std::string cut_to_columns(std::string_view text, std::size_t width);

// `text`'s words in lines of at most `width` columns (a longer word stays whole on its own
// line). Runs of spaces between words become one.
std::vector<std::string> wrap_words(std::string_view text, std::size_t width);

// The width to give output that goes to no terminal (cli::terminal_columns' fallback) (a file, a
// pipe, a log): no limit, so that lines stay whole for grep and for the reader's own terminal.
inline constexpr int kNoWidthLimit = 1 << 16;

}  // namespace gpuclean::output
