"""The plugin ABI headers against the repository's own copies of the specs.

include/attncheck/plugin.h must declare exactly the C code block of docs/abi/plugin-abi.md
(version 1), include/attncheck/plugin_v2.h that of docs/abi/plugin-abi-v2.md (version 2),
and include/attncheck/plugin_v3.h that of docs/abi/plugin-abi-v3.md (version 3):
comments and runs of white space are ignored, every other character counts. The specs are
contracts with people outside the project (docs/abi/README.md): a header that drifts from its
spec breaks every plugin built against the spec.

The project's own CI also runs the spec owners' check-abi tool, which lives outside the
repository, where it is at hand; this test is the same comparison against the copies a
clone has, so a user's clone checks its headers too.

Run by CTest (tests/layers/CMakeLists.txt) with Debian's /usr/bin/python3:
  python3 tests/layers/abi_headers.py <repository root>
"""
import difflib
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")


def tokens(text):
    """The text without /* */ and // comments, split on white space."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return text.split()


def first_c_block(markdown):
    """The first ```c fenced block of a spec page: the header it pins."""
    m = re.search(r"^```c\n(.*?)^```$", markdown, flags=re.S | re.M)
    return m.group(1) if m else None


pairs = [("plugin.h", "plugin-abi.md", True), ("plugin_v2.h", "plugin-abi-v2.md", True),
         ("plugin_v3.h", "plugin-abi-v3.md", True)]
compared = 0
for header, spec, required in pairs:
    header_path = os.path.join(root, "include", "attncheck", header)
    spec_path = os.path.join(root, "docs", "abi", spec)
    if not os.path.exists(header_path):
        expect(not required, f"include/attncheck/{header} is missing")
    expect(os.path.exists(spec_path), f"docs/abi/{spec} is missing: the header's spec")
    block = first_c_block(open(spec_path, encoding="utf-8").read())
    expect(block is not None, f"docs/abi/{spec} has no ```c code block")
    want, got = tokens(block), tokens(open(header_path, encoding="utf-8").read())
    expect(len(want) > 50, f"docs/abi/{spec}'s code block has only {len(want)} tokens: not a header")
    if want != got:
        diff = "\n".join(list(difflib.unified_diff(want, got, f"docs/abi/{spec}", f"include/attncheck/{header}",
                                                   lineterm="", n=3))[:40])
        expect(False, f"include/attncheck/{header} differs from docs/abi/{spec} "
                      f"(comments and spacing ignored; a token a line):\n{diff}")
    print(f"abi_headers: include/attncheck/{header} declares exactly docs/abi/{spec} ({len(got)} tokens)")
    compared += 1
expect(compared == 3, f"compared {compared} headers, expected versions 1, 2 and 3")
