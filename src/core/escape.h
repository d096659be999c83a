// Escaping of untrusted text (process names, command lines, cgroup paths) before it reaches a
// terminal or a Slurm drain reason. In core, not in output/ where the renderers use it: the
// one-line problem messages (diagnose/) cut a command name by what it shows as once escaped,
// and both must follow the same rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuclean {

// Returns text safe to print: valid UTF-8 with no character a terminal acts on or draws as
// nothing, a blank or a line break. A backslash becomes \\ (so the escaping is unambiguous);
// newline, tab and ESC become \n, \t, \e; the other C0 controls, DEL and every byte that is not
// valid UTF-8 become \xNN; the rest of Unicode's invisible and separator characters become
// \u{NNNN}: general categories Cc (C1 controls: CSI is U+009B), Cf (zero-width characters,
// bidirectional overrides or "Trojan Source", tags), Zl, Zp (U+2028, U+2029) and Zs other than
// the ASCII space (no-break, em and ideographic spaces) — core/unicode_invisible.inc, generated
// from Unicode's data by scripts/gen_unicode_table.py.
std::string escape_terminal(std::string_view text);

// `word` as one word of a shell command a user can paste: as it is when it has only characters
// no shell acts on, else single-quoted (a group name or an argument is whoever's choice).
std::string shell_word(const std::string& word);

// The one way gpuclean shows a command line (who, status, top, kill, explain, history, the
// journal): the arguments joined by spaces, each told apart from its neighbours. An argument
// that is empty, holds a space or starts with ' is single-quoted, a ' in it doubled ("a b" is
// 'a b', a' 'b is 'a'' ''b'); the rest stay bare (print('hi')), so no bare word looks quoted.
// The whole is then escaped as escape_terminal does and cut as cut_for_display does (at most
// `max_chars` shown, "…" included). Not quoting for a shell ($, * stay): shell_word is that.
std::string display_argv(const std::vector<std::string>& argv,
                         std::size_t max_chars = static_cast<std::size_t>(-1));

// "[comm]": a process without a command line (a kernel thread, a zombie) by its name, as ps
// shows it; not escaped (history stores it as the process's argv, who shows it escaped).
std::string bracketed_name(std::string_view comm);

// Whether `code_point` is in the generated table above (escape_terminal shows it escaped).
bool is_invisible_or_separator(std::uint32_t code_point);

// `text` cut so that escape_terminal of the result shows at most `max_chars` characters (at
// least 1), a closing "…" included, so that a name a user chose cannot push what follows out
// of a line that is cut at a fixed length (a drain reason). The cut falls between characters
// (a valid UTF-8 sequence or a single invalid byte), never inside one or inside its escape;
// an escaped character counts as the characters of its escape. Text that fits is returned whole.
std::string cut_for_display(std::string_view text, std::size_t max_chars);

}  // namespace gpuclean
