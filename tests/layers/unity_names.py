"""The library's unity build stays the build of its files (#31).

attncheck_lib is compiled in unity batches (src/CMakeLists.txt: several .cpp
files included into one translation unit). There a file's private names stop
being private: two files of a batch that each define `kNaN` fail to compile
(loud, harmless), but two that each define a helper `joined` taking different
arguments compile into one overload set, and a call may silently pick the other
file's helper. A file-scope `using namespace X;` leaks into every later file of
its batch the same way.

So: among the files the build puts in unity batches (read from the generated
Unity/unity_*_cxx.cxx, i.e. what the build really combines), no two may define
the same file-local name (anything in an anonymous namespace, or `static` at
namespace scope: functions, function templates, variables, types, aliases,
using-declarations), and none may hold a file-scope using-directive. Checked
over all batch files together, not batch by batch, so adding a file that moves
the batch boundaries cannot make a passing tree fail elsewhere. The fix named in
the failure: rename the helper, or put the file in ATTNCHECK_UNITY_SKIP
(src/CMakeLists.txt) so it compiles on its own.

Run by CTest with Debian's /usr/bin/python3 (the interpreter CMake found).
Usage: unity_names.py LIB_OBJECT_DIR (src/CMakeFiles/attncheck_lib.dir)
       unity_names.py --self-test
"""
import collections
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402  (not assert: python -O strips asserts)

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "alignof", "decltype", "operator",
            "static_assert", "noexcept", "requires", "const", "constexpr", "inline", "static"}


def strip(text):
    """The text with comments, string and character literals blanked (same length, lines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000 digit separators
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


def declared_name(stmt):
    """The name a namespace-scope declaration (its text up to `;` or `{`) introduces, or None."""
    s = re.sub(r"\s+", " ", stmt).strip()
    s = re.sub(r"^(template ?<.*?> ?)+", "", s) if s.startswith("template") else s
    if not s or s.startswith(("#", "extern ", "friend ", "namespace")):
        return None
    m = re.match(r"^(?:static )?(?:struct|class|union|enum(?: class| struct)?) (?:\[\[.*?\]\] )?([A-Za-z_]\w*)", s)
    if m:
        return m.group(1)
    m = re.match(r"^using ([A-Za-z_]\w*) ?=", s)
    if m:
        return m.group(1)
    m = re.match(r"^using (?:typename )?[\w:]*::([A-Za-z_]\w*)$", s)
    if m:
        return m.group(1)
    paren = s.find("(")
    eq = s.find("=")
    head = s[:paren] if paren >= 0 and (eq < 0 or paren < eq) else (s[:eq] if eq >= 0 else s)
    head = re.sub(r"\[[^\]]*\]", "", head).strip()  # arrays and attributes
    m = re.search(r"([A-Za-z_]\w*)\s*(?:<[^<>]*>)?\s*$", head)
    if not m or m.group(1) in KEYWORDS or "::" in head[m.start() - 2:m.start()]:
        return None  # a definition of something declared elsewhere (X::f), or no name
    return m.group(1)


def file_locals(text):
    """(names, directives): the file-local names a .cpp defines, and its file-scope using-directives."""
    src = strip(text)
    src = re.sub(r"^[ \t]*#.*$", "", src, flags=re.M)  # preprocessor lines
    names, directives = set(), []
    scopes = []  # "anon", "named" or "block" for each open brace
    stmt = []
    i = 0
    while i < len(src):
        c = src[i]
        at_ns_scope = all(k != "block" for k in scopes)
        if c == "{":
            text = "".join(stmt).strip()
            if at_ns_scope and re.fullmatch(r"(inline )?namespace", re.sub(r"\s+", " ", text)):
                scopes.append("anon")
            elif at_ns_scope and re.match(r"^(inline\s+)?namespace\s+[\w:]+$", text):
                scopes.append("named")
            elif at_ns_scope and re.match(r'^extern\s*$', text):
                scopes.append("named")
            else:
                if at_ns_scope and text:
                    local = "anon" in scopes or re.match(r"^(template\s*<.*?>\s*)?static\b", text, re.S)
                    name = declared_name(text)
                    if local and name:
                        names.add(name)
                scopes.append("block")
            stmt = []
        elif c == "}":
            if scopes:
                scopes.pop()
            stmt = []
        elif c == ";":
            if at_ns_scope:
                text = "".join(stmt).strip()
                m = re.match(r"^using\s+namespace\s+([\w:]+)$", text)
                if m:
                    directives.append(m.group(1))
                elif text:
                    local = "anon" in scopes or re.match(r"^(template\s*<.*?>\s*)?static\b", text, re.S)
                    name = declared_name(text)
                    if local and name:
                        names.add(name)
            stmt = []
        elif c == "(" and all(k != "block" for k in scopes):
            # a parameter list or initialiser: skip to its matching ')' (no braces of interest inside)
            depth, j = 0, i
            while j < len(src):
                depth += {"(": 1, ")": -1}.get(src[j], 0)
                if depth == 0:
                    break
                j += 1
            stmt.append(src[i:j + 1])
            i = j + 1
            continue
        else:
            stmt.append(c)
        i += 1
    return names, directives


def unity_files(obj_dir):
    files = []
    for unit in sorted(glob.glob(os.path.join(obj_dir, "Unity", "unity_*_cxx.cxx"))):
        with open(unit) as f:
            files += re.findall(r'#include "([^"]+\.cpp)"', f.read())
    return files


def problems(files):
    seen = collections.defaultdict(list)
    found = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            names, directives = file_locals(f.read())
        for n in names:
            seen[n].append(path)
        for d in directives:
            found.append(f"{path}: `using namespace {d};` at file scope leaks into the files after it in its batch")
    for n, paths in sorted(seen.items()):
        if len(paths) > 1:
            found.append(f"file-local name `{n}` defined in {len(paths)} unity files: " + ", ".join(sorted(paths)))
    return found


def self_test():
    a = """#include <x>
namespace attncheck {
namespace {
constexpr double kNaN = 0;  // a comment { with a brace
template <typename T>
std::string joined(const std::vector<T>& v, char sep) { if (x) { return "}"; } return {}; }
struct Cell { int x; };
using Rows = int;
}  // namespace
static int counted(int) { return 1; }
int exported(int a) { static int inner = 0; return a + inner; }
double Law::run(const Problem& p) const { return 0; }
using namespace zones;
}  // namespace attncheck
"""
    names, directives = file_locals(a)
    expect(names == {"kNaN", "joined", "Cell", "Rows", "counted"}, f"names {sorted(names)}")
    expect(directives == ["zones"], f"directives {directives}")
    b = "namespace attncheck {\nnamespace {\nstd::string joined(int n) { return {}; }\n}\n}\n"
    names_b, _ = file_locals(b)
    expect(names_b == {"joined"}, f"names {sorted(names_b)}")
    print("self-test: file-local names and using-directives found")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    obj_dir = sys.argv[1]
    files = unity_files(obj_dir)
    expect(files, f"no unity batch under {obj_dir}/Unity: is attncheck_lib's UNITY_BUILD off?")
    found = problems(files)
    expect(not found, "the unity build would mix these files' private names (rename the helper, or add the "
           "file to ATTNCHECK_UNITY_SKIP in src/CMakeLists.txt):\n  " + "\n  ".join(found))
    print(f"unity build: {len(files)} files in batches, no file-local name defined twice, no file-scope "
          "using-directive")


if __name__ == "__main__":
    main()
