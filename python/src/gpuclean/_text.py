"""Command lines and words as gpuclean's own text output shows them: each argument quoted like a
shell word, then control characters, invisible characters and invalid UTF-8 escaped, cut to a
width. A port of the binary's ``argv_text`` (src/output/history_view.cpp), ``shell_word`` and
``escape_terminal`` (src/core/escape.cpp), so that a report of this package and gpuclean's own
name a process the same way."""

from __future__ import annotations

import unicodedata
from typing import Iterator, Optional, Sequence, Tuple

# Bytes that never need quoting in a shell word (shell_word's set).
_PLAIN = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@,=")
# Unicode's general categories escape_terminal shows as \u{…} (U+0020 excepted).
_INVISIBLE = frozenset(("Cc", "Cf", "Zl", "Zp", "Zs"))


def _utf8(text: str) -> bytes:
    """TEXT's bytes: a lone surrogate that stands for an undecodable byte (surrogateescape, as
    os.fsdecode makes) is that byte again; any other is encoded as is, and shown escaped."""
    out = bytearray()
    for c in text:
        code = ord(c)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(code - 0xDC00)
        else:
            out += c.encode("utf-8", "surrogatepass")
    return bytes(out)


def _sequence(data: bytes, i: int) -> Tuple[int, int]:
    """(length, code point) of the valid UTF-8 sequence at DATA[i], or (0, 0) (utf8_sequence)."""
    lead = data[i]
    if lead < 0x80:
        return 1, lead
    if lead & 0xE0 == 0xC0:
        length, code, low = 2, lead & 0x1F, 0x80
    elif lead & 0xF0 == 0xE0:
        length, code, low = 3, lead & 0x0F, 0x800
    elif lead & 0xF8 == 0xF0:
        length, code, low = 4, lead & 0x07, 0x10000
    else:
        return 0, 0
    if i + length > len(data):
        return 0, 0
    for k in range(1, length):
        if data[i + k] & 0xC0 != 0x80:
            return 0, 0
        code = (code << 6) | (data[i + k] & 0x3F)
    # Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
    if code < low or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return 0, 0
    return length, code


def _units(data: bytes) -> Iterator[Tuple[int, str]]:
    """Each character (or invalid byte) of DATA as escape_terminal shows it: (bytes taken,
    text shown)."""
    i = 0
    while i < len(data):
        length, code = _sequence(data, i)
        if length == 0:
            yield 1, f"\\x{data[i]:02x}"
            i += 1
            continue
        if code == 0x5C:
            shown = "\\\\"
        elif code == 0x0A:
            shown = "\\n"
        elif code == 0x09:
            shown = "\\t"
        elif code == 0x1B:
            shown = "\\e"
        elif code < 0x20 or code == 0x7F:
            shown = f"\\x{code:02x}"
        elif code != 0x20 and unicodedata.category(chr(code)) in _INVISIBLE:
            shown = f"\\u{{{code:04x}}}"
        else:
            shown = chr(code)
        yield length, shown
        i += length


def escape_terminal(text: str) -> str:
    """TEXT with nothing a terminal would act on or hide: backslash, control and invisible
    characters escaped (\\n, \\t, \\e, \\xNN, \\u{NNNN}), and invalid UTF-8 as \\xNN."""
    return "".join(shown for _, shown in _units(_utf8(text)))


def _shell_word(word: bytes) -> bytes:
    if word and all(b in _PLAIN for b in word):
        return word
    return b"'" + word.replace(b"'", b"'\\''") + b"'"


def shell_word(word: str) -> str:
    """WORD as a shell reads it back: as is when it holds only safe characters, else in single
    quotes (a quote inside as '\\''). Not escaped: see argv_text."""
    return _shell_word(_utf8(word)).decode("utf-8", "surrogateescape")


def argv_text(argv: Sequence[str], max_chars: Optional[int] = 120) -> str:
    """A command line as gpuclean's text output shows it: each argument a shell word (one with
    a space or quote is quoted: ``sh -c 'exec sleep 300 < /dev/nvidia0'``), the whole escaped
    for a terminal, and cut to MAX_CHARS characters with "…" (None: never cut); "?" for an
    empty one."""
    data = b" ".join(_shell_word(_utf8(str(arg))) for arg in argv)
    if not data:
        return "?"
    units = list(_units(data))
    shown = 0
    keep = 0  # units whose text fits with room for "…"
    for count, (_, text) in enumerate(units):
        shown += len(text)
        if max_chars is not None and shown < max_chars:
            keep = count + 1
        if max_chars is not None and shown > max_chars:
            return "".join(text for _, text in units[:keep]) + "…"
    return "".join(text for _, text in units)
