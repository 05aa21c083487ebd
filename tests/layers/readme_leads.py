#!/usr/bin/python3
"""readme_leads: the README leads a newcomer from clone to a checked kernel of their own,
and every page it and docs/ point at is there (issue #34).

Usage: readme_leads.py REPO_ROOT

Checks, each a way the README drifted before:
- its sections come in the order a newcomer needs them (what it is, Install, the three
  "Check ..." sections, a failure, the zoo, where to read more), "Check your own C kernel"
  within the first 80 lines (it started at line 323, after three 35-row tables);
- Install holds the two commands, and .ci/run runs the second;
- it has one zoo table (the others are docs/zoo.md's);
- every docs/*.md page is listed under "Where to read more";
- every relative link of README.md and docs/**/*.md exists, and so does every `docs/...`
  path README.md and docs/*.md name (docs/abi/'s pinned specs name other projects' docs/ too);
- no file of the tree cites the spec owners' folders (shared/spec, spec/plugin-abi*.md,
  spec/cli.md), which a clone does not have: the repository cites docs/abi/.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from expect import expect  # noqa: E402

root = os.path.abspath(sys.argv[1])
readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
lines = readme.split("\n")


def heading_line(title):
    """1-based line of the `## title` heading, or 0."""
    for n, line in enumerate(lines, 1):
        if line.strip() == "## " + title:
            return n
    return 0


ORDER = ["Install", "Check your own C kernel", "Check a Python function",
         "Check a C++ function from your tests", "What a failure looks like", "The bug zoo",
         "Where to read more"]
at = [heading_line(t) for t in ORDER]
for title, n in zip(ORDER, at):
    expect(n > 0, f"README.md has no '## {title}' section")
expect(at == sorted(at), f"README.md's sections are out of order: {list(zip(ORDER, at))}")
expect(at[1] <= 80, f"'## Check your own C kernel' starts at line {at[1]} of README.md, past 80")

install = readme[readme.index("## Install"):readme.index("## Check your own C kernel")]
first = (".ci/install-deps && cmake --preset default && cmake --build --preset default"
         " && build/attncheck check")
second = (".ci/install-deps && cmake --preset default && cmake --build --preset default"
          " && ctest --preset default")
expect(first in install, "Install lacks the command that builds and runs `attncheck check`")
expect(second in install, "Install lacks the command that builds and runs the test suite")
ci_run = open(os.path.join(root, ".ci", "run"), encoding="utf-8").read()
expect("cmake --preset default && cmake --build --preset default" in ci_run
       and "ctest --preset default" in ci_run, ".ci/run does not run the README's second command")

tables = [line for line in lines if line.startswith("| law |")]
expect(len(tables) == 1, f"README.md has {len(tables)} zoo tables; one, the others in docs/zoo.md")

more = readme[readme.index("## Where to read more"):]
more = more[:more.find("\n## ", 1)] if "\n## " in more[1:] else more
docs = os.path.join(root, "docs")
for page in sorted(os.listdir(docs)):
    if page.endswith(".md"):
        expect(f"(docs/{page})" in more, f"docs/{page} is not listed under 'Where to read more'")

# Every relative link and every docs/ path named in README.md and the pages under docs/.
pages = [os.path.join(root, "README.md")]
for folder, _, files in os.walk(docs):
    pages += [os.path.join(folder, f) for f in files if f.endswith(".md")]
link = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
named = re.compile(r"(?<![\w/.])(docs/[\w./-]*\w)")
for page in pages:
    text = open(page, encoding="utf-8").read()
    where = os.path.relpath(page, root)
    for target in link.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path = os.path.normpath(os.path.join(os.path.dirname(page), target))
        expect(os.path.exists(path), f"{where} links to {target}, which does not exist")
    if os.sep + "abi" + os.sep in page:
        continue  # the pinned specs also name other projects' files (flashinfer's docs/...)
    for target in named.findall(text):
        expect(os.path.exists(os.path.join(root, target)),
               f"{where} names {target}, which does not exist")

# No citation of the spec owners' folders anywhere in the tree.
cited = re.compile(r"shared/spec|(?<!docs/abi/)(?<![\w-])spec/(plugin-abi[\w.-]*|cli)\.md")
skip = {".git", "fuzz-work"}
for folder, dirs, files in os.walk(root):
    dirs[:] = [d for d in dirs if d not in skip and not d.startswith("build")]
    for f in files:
        if not f.endswith((".md", ".c", ".h", ".cpp", ".hpp", ".py", ".txt", ".cmake", ".sh", ".json")):
            continue
        path = os.path.join(folder, f)
        if path == os.path.abspath(__file__):
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        m = cited.search(text)
        expect(m is None, f"{os.path.relpath(path, root)} cites {m.group(0) if m else ''}: "
                          "cite docs/abi/ instead (a clone has no spec/ or ../shared)")
print("readme_leads: README sections in order, one zoo table, every docs page listed, "
      "every link and docs/ path resolves, no spec/ citations")
