"""Lengths of the function definitions in C++ files, by brace counting; fails past a limit.

Comments, string and character literals are blanked first (raw strings too),
then every '{' is classified by the text since the previous ';', '{' or '}':
namespace/class/struct/union/enum/extern bodies are scopes; a '{' outside any
function whose header holds '(' opens a function body, which ends at its
matching '}'. The length is from the header's first line to the closing
brace's line, both included. Lambdas and blocks inside a body are part of it.

Run by CTest (cli_functions_short, tests/layers/CMakeLists.txt) with Debian's /usr/bin/python3:
  python3 tests/layers/function_lengths.py src/cli 120 main
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402


def blank(src):
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i); j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j
        elif c == 'R' and src.startswith('R"', i) and (i == 0 or not (src[i-1].isalnum() or src[i-1] == '_')):
            k = src.find('(', i); delim = src[i+2:k]
            j = src.find(')' + delim + '"', k); j = n if j < 0 else j + len(delim) + 2
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j
        elif c in '"\'':
            if c == "'" and i > 0 and src[i-1].isalnum():  # digit separator 1'000
                out.append(' '); i += 1; continue
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == '\\' else 1
            j = min(n, j + 1)
            out.append(re.sub(r'[^\n]', ' ', src[i:j])); i = j
        elif c == '#' and (i == 0 or src[i-1] == '\n'):  # preprocessor line
            j = i
            while True:
                k = src.find('\n', j); k = n if k < 0 else k
                if k > 0 and src[k-1] == '\\': j = k + 1; continue
                break
            out.append(re.sub(r'[^\n]', ' ', src[i:k])); i = k
        else:
            out.append(c); i += 1
    return ''.join(out)

def functions(path):
    text = blank(open(path, encoding='utf-8', errors='replace').read())
    stack, header_start, found = [], 0, []  # stack entries: 'scope' | ('fn', line, name) | 'block'
    line_of = lambda pos: text.count('\n', 0, pos) + 1
    for m in re.finditer(r'[{};]', text):
        ch, pos = m.group(), m.start()
        in_fn = any(isinstance(e, tuple) for e in stack)
        if ch == '{':
            header = text[header_start:pos]
            if in_fn:
                stack.append('block')
            elif re.search(r'\b(namespace|class|struct|union|enum)\b', header) and '(' not in header.split('=')[0] \
                    or re.search(r'extern\s*$', header.strip()[:-0] or '') or header.strip().startswith('extern'):
                stack.append('scope')
            elif '(' in header and not re.search(r'=\s*$', header.strip()):
                first = header_start + len(header) - len(header.lstrip())
                nm = re.findall(r'([~\w:<>]+)\s*\(', header)
                stack.append(('fn', line_of(first), nm[0] if nm else '?'))
            else:
                stack.append('block')
            header_start = pos + 1
        elif ch == '}':
            if stack:
                e = stack.pop()
                if isinstance(e, tuple):
                    found.append((line_of(pos) - e[1] + 1, f'{path}:{e[1]}', e[2]))
            header_start = pos + 1
        else:
            if not in_fn: header_start = pos + 1
    return found

if __name__ == "__main__":
    # function_lengths.py DIR LIMIT [EXEMPT...]: every function of DIR's .cpp and .h files is
    # at most LIMIT lines long, but those named in EXEMPT (docs/architecture.md: the commands'
    # steps are named functions; main alone parses every flag).
    folder, limit, exempt = sys.argv[1], int(sys.argv[2]), set(sys.argv[3:])
    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs if f.endswith((".cpp", ".h")))
    expect(paths, f"{folder}: no sources (a wrong path would make this check pass on nothing)")
    rows = sorted((r for p in paths for r in functions(p)), reverse=True)
    expect(rows, f"{folder}: found no function at all: the brace counter is broken")
    long = [f"{n} lines: {name} ({where})" for n, where, name in rows if n > limit and name not in exempt]
    expect(not long, f"functions of {folder} longer than {limit} lines (split them into named steps):\n  "
           + "\n  ".join(long))
    n, where, name = next(r for r in rows if r[2] not in exempt)
    print(f"{folder}: {len(rows)} functions; the longest but {', '.join(sorted(exempt)) or 'none'}: {name}, {n} lines")
