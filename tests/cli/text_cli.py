#!/usr/bin/python3
"""Issue #30, "untrusted text stays text" and "reports that do not lie after an
interrupt": what a plugin, a Python traceback, a case file's name or a config
file holds can break no report and reach no terminal raw, every JSON input has
the same limits, and a report on disk is always this run's, whole.

Usage: text_cli.py ATTNCHECK SCENARIO SOURCE_DIR TEST_PLUGIN_DIR WORKDIR
Scenarios:
  junit-any-bytes     the JUnit file is well-formed XML 1.0 (xmllint, junit-10.xsd) whatever
                      bytes a plugin's error text or a case file's name holds
  markdown-escaped    names and messages cannot break the Markdown table or inject HTML
  console-clean       no control or bidi character on the console from a plugin's texts or a
                      case file's law, dtype or source
  console-case-names  ... nor from a case file's name (replay)
  console-load-errors ... nor from a plugin's load-error reason (C and Python)
  config-limits       --config nests at most as deep as a case file, and a FIFO, a device or a
                      folder given as --config or as a case file is refused at once
  python-exception    a Python exception's text survives a NUL and a lone surrogate
  stale-reports       an interrupted run leaves no earlier report at the report paths; a
                      finished one leaves no temporary file, and writes through a symlink
  report-aliases      two report flags naming one file (symlink, dangling symlink, hard
                      link) are refused with exit 2
Standard library only; run with Debian's /usr/bin/python3.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

attncheck, scenario, source_dir, plugin_dir, work = sys.argv[1:6]
work = os.path.join(os.path.abspath(work), scenario)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
schema = os.path.join(source_dir, "tests", "cli", "schema", "junit-10.xsd")
fixtures = os.path.join(source_dir, "tests", "cli", "text_fixtures")
seed_case = os.path.join(source_dir, "regression", "cases", "matches_oracle-1216a54d650afb83.json")
ENV = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "ATTNCHECK_SEED")}


def fail(why):
    sys.exit(f"FAILED ({scenario}): {why}")


def expect(cond, why):
    if not cond:
        fail(why)


def plugin(stem):
    return os.path.join(plugin_dir, stem + ".so")


def run(args, expect_rc=None, env=None, timeout=120):
    """attncheck ARGS (str or bytes): (exit status, stdout, stderr), the output decoded
    with surrogateescape so that a raw byte that is not UTF-8 stays visible."""
    p = subprocess.run([attncheck] + args, capture_output=True, timeout=timeout, env=dict(ENV, **(env or {})))
    out = p.stdout.decode("utf-8", "surrogateescape")
    err = p.stderr.decode("utf-8", "surrogateescape")
    if expect_rc is not None and p.returncode != expect_rc:
        shown = [a.decode("utf-8", "backslashreplace") if isinstance(a, bytes) else a for a in args]
        fail(f"attncheck {' '.join(shown)}: exit {p.returncode}, expected {expect_rc}\n{out[-3000:]!r}\n{err[-3000:]!r}")
    return p.returncode, out, err


# What a terminal obeys instead of showing: C0 controls but the newline, DEL, C1
# controls, bidi embeddings/overrides/isolates and marks, line/paragraph
# separators; and raw bytes that are not UTF-8 (surrogateescape's U+DC80..U+DCFF).
def obeyed(ch):
    c = ord(ch)
    return ((c < 0x20 and ch != "\n") or 0x7F <= c <= 0x9F or 0x202A <= c <= 0x202E or 0x2066 <= c <= 0x2069
            or c in (0x200E, 0x200F, 0x061C, 0x2028, 0x2029) or 0xDC80 <= c <= 0xDCFF)


def console_clean(text, what):
    bad = sorted({f"U+{ord(c):04X}" for c in text if obeyed(c)})
    expect(not bad, f"{what}: the console got raw {bad}:\n{text[-3000:]!r}")


def xml_well_formed(path):
    p = subprocess.run(["xmllint", "--noout", path], capture_output=True, text=True, errors="replace")
    expect(p.returncode == 0, f"{path} is not well-formed XML 1.0:\n{p.stderr[-3000:]}")
    p = subprocess.run(["xmllint", "--noout", "--schema", schema, path], capture_output=True, text=True,
                       errors="replace")
    expect(p.returncode == 0, f"{path} does not validate against junit-10.xsd:\n{p.stderr[-3000:]}")


def case_copy(folder, name, edit=None):
    """The seed layer's recorded case (seed_unscaled fails matches_oracle on it), saved
    as folder/name (bytes), optionally changed by edit(dict)."""
    case = json.load(open(seed_case))
    if edit:
        edit(case)
    path = os.path.join(os.fsencode(folder), name)
    with open(path, "w") as f:
        json.dump(case, f)
    return path


HOSTILE_NAME_BYTES = b"\xed\xa0\x80 \xc0\xaf \xf5\xf6\xf7 \xef\xbf\xbe \xef\xbf\xbf \x01\x1b[31m \xe2\x80\xae"

if scenario == "junit-any-bytes":
    # A plugin's error text: U+FFFE, U+FFFF, C0 controls, a surrogate, an overlong
    # form, F5..F7, past U+10FFFF, a cut sequence.
    junit, js = os.path.join(work, "check.xml"), os.path.join(work, "check.json")
    run(["check", "--plugin", plugin("hostile_text_fail_plugin"), "--law", "matches_oracle", "--cases", "5",
         "--seed", "1", "--junit", junit, "--json", js], 1)
    xml_well_formed(junit)
    message = json.load(open(js))["implementations"][0]["laws"][0]["message"]
    expect("end" in message and "surrogate" in message, f"the plugin's text reached the report: {message!r}")
    text = open(junit, encoding="utf-8").read()
    expect("html &lt;b&gt;|&lt;/b&gt; end" in text, "the failure's text is in the JUnit file, escaped")
    # A case file's name: the same bytes, through a replay's testcase names.
    folder = os.path.join(work, "cases")
    os.makedirs(folder)
    # Without its "expect": a failure, whose body repeats the name in the reproducing command.
    case_copy(folder, b"matches_oracle-" + HOSTILE_NAME_BYTES + b".json", lambda c: c.pop("expect"))
    replay_junit = os.path.join(work, "replay.xml")
    run(["replay", folder, "--impl", "seed_unscaled", "--junit", replay_junit], 1)
    xml_well_formed(replay_junit)
    print("junit-any-bytes: both files well-formed and valid")
elif scenario == "markdown-escaped":
    md = os.path.join(work, "summary.md")
    run(["check", "--plugin", plugin("hostile_text_plugin"), "--plugin", plugin("hostile_text_fail_plugin"),
         "--law", "matches_oracle", "--cases", "5", "--seed", "1", "--markdown", md], 1)
    text = open(md, encoding="utf-8", errors="surrogateescape").read()
    console_clean(text.replace("\n", ""), "the Markdown file")
    rows = [l for l in text.splitlines() if l.startswith("|")]
    cells = lambda row: len(re.findall(r"(?<!\\)\|", row))
    expect(len({cells(r) for r in rows}) == 1, f"a name or message changed a row's cells: {rows}")
    expect(cells(rows[0]) == 4, f"the header is law and two implementations: {rows[0]!r}")
    outside_code = re.sub(r"(`+) .*? \1", "", text)
    for markup in ("<", "*", "[", "&"):
        raw = re.findall(r"(?<!\\)" + re.escape(markup), outside_code.replace("**", ""))
        expect(not raw, f"unescaped {markup!r} outside code spans could inject markup:\n{text}")
    expect("\\<img src=x onerror=alert(1)\\>" in text, f"the name is shown, escaped:\n{text}")
    print("markdown-escaped: the table holds, no markup gets through")
elif scenario == "console-clean":
    # A plugin's name and texts (its err on the calls it declines and on failures).
    _, out, err = run(["check", "--plugin", plugin("hostile_text_plugin"), "--plugin",
                       plugin("hostile_text_fail_plugin"), "--law", "matches_oracle", "--cases", "5", "--seed", "1",
                       "--dtype", "f16,f32"], 1)
    console_clean(out + err, "check of the hostile-text plugins")
    expect("\\u202e" in out + err and "\\x1b" in out + err, f"the texts are shown, escaped:\n{out}\n{err}")
    # A case file's law, dtype and source in REFUSED lines.
    folder = os.path.join(work, "cases")
    os.makedirs(folder)
    case_copy(folder, b"law.json", lambda c: c.update(law="matches_oracle\x1b[2J\u202e"))
    case_copy(folder, b"dtype.json", lambda c: c["problem"].update(dtype="f32\x1b[2J\u202e"))
    case_copy(folder, b"source.json", lambda c: c["history"].update(source="plugin:/no/such\x1b[2J\u202e.so"))
    rc, out, err = run(["replay", folder], 2)
    console_clean(out + err, "replay of case files with hostile fields")
    expect(err.count("REFUSED") == 3, f"all three refused:\n{err}")
    print("console-clean: plugin texts and case file fields escaped")
elif scenario == "console-case-names":
    folder = os.path.join(work, "cases")
    os.makedirs(folder)
    case_copy(folder, b"matches_oracle-" + HOSTILE_NAME_BYTES + b".json")
    case_copy(folder, b"unknown_law-" + HOSTILE_NAME_BYTES + b".json", lambda c: c.update(law="no_such_law"))
    _, out, err = run(["replay", folder, "--impl", "seed_unscaled"], 2)
    console_clean(out + err, "replay of case files with hostile names")
    # The same name through a recorded source that cannot load.
    os.remove(os.path.join(os.fsencode(folder), b"unknown_law-" + HOSTILE_NAME_BYTES + b".json"))
    case_copy(folder, b"matches_oracle-" + HOSTILE_NAME_BYTES + b".json",
              lambda c: c["history"].update(source="plugin:/no/such/plugin.so"))
    _, out, err = run(["replay", folder], 2)
    console_clean(out + err, "replay of a case file with a hostile name whose source cannot load")
    print("console-case-names: escaped")
elif scenario == "console-load-errors":
    _, out, err = run(["check", "--plugin", plugin("load_error_text_plugin"), "--cases", "5"], 2)
    console_clean(out + err, "a plugin's load-error reason")
    expect("import failed" in err and "end" in err, f"the reason is shown:\n{err}")
    if len(sys.argv) > 6 and sys.argv[6] == "python":
        _, out, err = run(["check", "--python", os.path.join(fixtures, "import_error_text.py:attention"),
                           "--cases", "5"], 2)
        console_clean(out + err, "a Python import error")
        expect("gnp.exe" in err and "end" in err, f"the import error is shown:\n{err}")
    print("console-load-errors: escaped")
elif scenario == "config-limits":
    base = ["check", "--impl", "reference", "--law", "weights_sum_to_one", "--cases", "5", "--seed", "1"]
    deep = os.path.join(work, "deep.json")
    with open(deep, "w") as f:
        f.write('{"skip_law": ' + "[" * 200000 + "]" * 200000 + "}")
    _, out, err = run(base + ["--config", deep], 2)
    expect("nest deeper than" in err, f"the nesting limit names the problem: {err[-500:]!r}")
    expect(len(err) < 1000, f"the message does not dump the value ({len(err)} characters)")
    dup = os.path.join(work, "dup.json")
    with open(dup, "w") as f:
        f.write('{"skip_law": ["nan_propagates"], "skip_law": []}')
    _, _, err = run(base + ["--config", dup], 2)
    expect("more than once" in err, f"a duplicate key is refused as in a case file: {err!r}")
    fifo = os.path.join(work, "fifo.json")
    os.mkfifo(fifo)
    for what, path, words in (("a FIFO", fifo, "FIFO"), ("a folder", work, "folder"),
                              ("a device", "/dev/zero", "device")):
        start = time.monotonic()
        _, _, err = run(base + ["--config", path], 2, timeout=60)
        expect(time.monotonic() - start < 30, f"--config on {what} took {time.monotonic() - start:.0f} s")
        expect(words in err and "regular file" in err, f"--config on {what}: {err!r}")
    for what, path, words in (("a FIFO", fifo, "FIFO"), ("a device", "/dev/zero", "device")):
        _, _, err = run(["replay", path, "--impl", "reference"], 2, timeout=60)
        expect(words in err and "regular file" in err, f"a case file that is {what}: {err!r}")
    print("config-limits: nesting bounded, FIFO, folder and device refused")
elif scenario == "python-exception":
    js = os.path.join(work, "py.json")
    run(["check", "--python", os.path.join(fixtures, "hostile_exception.py:raises_hostile_text"), "--law",
         "matches_oracle", "--cases", "5", "--seed", "1", "--json", js], 1)
    message = json.load(open(js))["implementations"][0]["laws"][0]["message"]
    for words in ("before", "after the NUL", "\\ud800", "tail of the message", "in _deep_helper",
                  "in raises_hostile_text"):
        expect(words in message, f"{words!r} is missing from the exception's text: {message!r}")
    print("python-exception: the whole text, NUL and surrogate escaped")
elif scenario == "stale-reports":
    paths = {flag: os.path.join(work, name) for flag, name in (("--json", "r.json"), ("--junit", "r.xml"),
                                                              ("--markdown", "r.md"))}
    report_args = [a for flag, path in paths.items() for a in (flag, path)]
    run(["check", "--impl", "reference", "--law", "weights_sum_to_one", "--cases", "5", "--seed", "1"] + report_args, 0)
    expect(all(os.path.exists(p) for p in paths.values()), "the first run wrote its reports")
    left = [n for n in os.listdir(work) if n.startswith(".")]
    expect(not left, f"no temporary file is left beside the reports: {left}")
    # A second run, killed while it loads its plugin: no report from the first may remain.
    p = subprocess.Popen([attncheck, "check", "--plugin", plugin("slow_load_plugin"), "--cases", "5"] + report_args,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=dict(ENV, ATTNCHECK_TEST_LOAD_DELAY_MS="60000"), start_new_session=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(os.path.exists(x) for x in paths.values()) and p.poll() is None:
        time.sleep(0.1)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    stale = [x for x in paths.values() if os.path.exists(x)]
    expect(not stale, f"an interrupted run left the earlier run's reports: {stale}")
    # Through a symlink: the file it names is written, the link stays.
    target = os.path.join(work, "real.json")
    link = os.path.join(work, "link.json")
    os.symlink("real.json", link)
    run(["check", "--impl", "reference", "--law", "weights_sum_to_one", "--cases", "5", "--seed", "1", "--json",
         link], 0)
    expect(os.path.islink(link) and json.load(open(target))["implementations"], "written through the symlink")
    print("stale-reports: nothing stale after an interrupt, no temporary left")
elif scenario == "report-aliases":
    base = ["check", "--impl", "reference", "--law", "weights_sum_to_one", "--cases", "5", "--seed", "1"]
    a = os.path.join(work, "a.json")
    # A dangling symlink: b.xml would create a.json.
    os.symlink("a.json", os.path.join(work, "b.xml"))
    _, _, err = run(base + ["--json", a, "--junit", os.path.join(work, "b.xml")], 2)
    expect("name the same file" in err, f"a dangling symlink to the other report: {err!r}")
    expect(not os.path.exists(a), "nothing was written")
    # A hard link.
    with open(a, "w") as f:
        f.write("{}")
    os.link(a, os.path.join(work, "c.md"))
    _, _, err = run(base + ["--json", a, "--markdown", os.path.join(work, "c.md")], 2)
    expect("name the same file" in err, f"a hard link to the other report: {err!r}")
    # An existing symlink, and a folder reached through a symlink.
    os.symlink(work, os.path.join(work, "again"))
    _, _, err = run(base + ["--json", a, "--junit", os.path.join(work, "again", "a.json")], 2)
    expect("name the same file" in err, f"the same file through a symlinked folder: {err!r}")
    rc, _, err = run(["replay", seed_case, "--impl", "reference", "--json", a, "--markdown",
                      os.path.join(work, "c.md")], 2)
    expect("name the same file" in err, f"replay refuses the hard link too: {err!r}")
    print("report-aliases: refused")
else:
    fail("unknown scenario " + scenario)
