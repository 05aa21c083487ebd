// Text nobody vouches for (a plugin's name and err buffer, a Python
// traceback, a case file's name and fields) made safe to print: a terminal
// must show it, never obey it. Every path that prints such text routes it
// through printable(); the report writers share utf8_sequence() to decide
// what well-formed UTF-8 is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attncheck {

// The length (2..4) of the well-formed UTF-8 sequence of a non-ASCII code
// point at s[i], with the code point in `cp`; 0 when there is none there:
// overlong forms (C0 AF), surrogates (ED A0 80), code points past U+10FFFF
// (F4 90.., F5..FF), stray continuation bytes and cut sequences.
std::size_t utf8_sequence(std::string_view s, std::size_t i, uint32_t& cp);

// Code points a terminal or a text view obeys instead of showing: the bidi
// embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069: they
// reorder what follows, "Trojan Source"), the implicit marks U+200E/U+200F,
// U+061C, and the line and paragraph separators U+2028/U+2029.
bool is_format_control(uint32_t cp);

// Whether newlines are the text's own line breaks (kept) or data (escaped).
enum class Newlines { escape, keep };

// `text` with every control character escaped: C0 controls and DEL as \n,
// \t, \r or \xNN, C1 controls (U+0080..U+009F, e.g. the CSI of 8-bit
// terminals) and is_format_control() code points as \u0080.., and bytes that
// are not UTF-8 as \xNN. Printable UTF-8 is kept as it is, and the result
// holds only printable text, so printable(printable(t)) == printable(t).
// Newlines::keep keeps '\n' (for text whose line breaks the program wrote).
// Example: printable("a\x1b[2Jb") == "a\\x1b[2Jb".
std::string printable(std::string_view text, Newlines newlines = Newlines::escape);

}  // namespace attncheck
