// Text that came from a plugin (its name, its err buffer) made safe to print:
// a terminal must show it, never obey it.
#pragma once

#include <string>
#include <string_view>

namespace attncheck {

// `text` with every control character escaped: C0 controls and DEL as \n,
// \t, \r or \xNN, C1 controls (U+0080..U+009F, e.g. the CSI of 8-bit
// terminals) as \u0080.., and bytes that are not UTF-8 as \xNN. Printable
// UTF-8 is kept as it is. Example: printable("a\x1b[2Jb") == "a\\x1b[2Jb".
std::string printable(std::string_view text);

}  // namespace attncheck
