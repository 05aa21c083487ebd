"""check() and assert_attention(): the CLI run with --python and --json, its report parsed."""
import inspect
import json
import os
import shutil
import subprocess
import tempfile


class AttncheckError(RuntimeError):
    """attncheck could not run as asked (its exit status 2): the message is its stderr."""


def find_attncheck():
    """The attncheck program: $ATTNCHECK_BIN, else the source tree's build/attncheck
    (this package is python/attncheck/ in it), else the install tree's bin/attncheck
    (the package installed in <prefix>/lib/python3.X/dist-packages), else attncheck on PATH."""
    env = os.environ.get("ATTNCHECK_BIN")
    if env:
        if not os.access(env, os.X_OK):
            raise AttncheckError(f"ATTNCHECK_BIN={env} is not an executable file")
        return env
    tree = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "build", "attncheck")
    if os.access(tree, os.X_OK):
        return tree
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "..", "..", "..", "..", "bin", "attncheck")
    if os.access(installed, os.X_OK):
        return os.path.normpath(installed)
    found = shutil.which("attncheck")
    if found:
        return found
    raise AttncheckError(f"attncheck not found: set ATTNCHECK_BIN, build it at {tree}, install it, or put it on PATH")


def target_of(fn_or_target):
    """The --python target for a function (FILE.py:NAME of its defining file), or the
    given MODULE_OR_FILE:FUNCTION text itself."""
    __tracebackhide__ = True  # pytest: the user's test leads the traceback, not this helper
    if isinstance(fn_or_target, str):
        return fn_or_target
    fn = fn_or_target
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not callable(fn) or not name:
        raise TypeError(f"attncheck.check takes a function or 'MODULE_OR_FILE:FUNCTION', got {fn!r}")
    if name == "<lambda>" or "<locals>" in name:
        raise TypeError(f"attncheck.check cannot check {name}: a lambda or a function defined inside another "
                        "function has no name the bridge can import; define it at module level")
    try:
        path = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except TypeError:
        path = None
    if not path or not path.endswith(".py"):
        module = getattr(fn, "__module__", None)
        if not module or module == "__main__":
            raise TypeError(f"attncheck.check cannot find the file that defines {name}")
        return f"{module}:{name}"
    return f"{os.path.abspath(path)}:{name}"


def _pythonpath():
    """PYTHONPATH for the bridge: this package's folder first (so a checked test file
    that imports attncheck finds it), then the caller's. The bridge appends these after
    its interpreter's own paths."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    old = os.environ.get("PYTHONPATH", "")
    return here + (os.pathsep + old if old else "")


def check(fn_or_target, laws=None, profile=None, seed=None, cases=None, dtype=None, extra_args=(), timeout=None):
    """Runs `attncheck check --python TARGET --json FILE` and returns the parsed report
    (docs/abi/cli-contract.md's JSON: "seed", "implementations" with one entry, its "verdict"
    and "laws"). Raises AttncheckError when attncheck exits 2 (bad target, import
    error, unknown law), with its stderr."""
    __tracebackhide__ = True  # pytest: the user's test leads the traceback, not this helper
    target = target_of(fn_or_target)
    with tempfile.TemporaryDirectory(prefix="attncheck-") as tmp:
        report_path = os.path.join(tmp, "report.json")
        cmd = [find_attncheck(), "check", "--python", target, "--json", report_path]
        for law in [laws] if isinstance(laws, str) else (laws or []):
            cmd += ["--law", law]
        if profile is not None:
            cmd += ["--profile", str(profile)]
        if seed is not None:
            cmd += ["--seed", str(seed)]
        if cases is not None:
            cmd += ["--cases", str(cases)]
        if dtype is not None:
            cmd += ["--dtype", str(dtype)]
        cmd += list(extra_args)
        env = dict(os.environ, PYTHONPATH=_pythonpath())
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        if run.returncode not in (0, 1) or not os.path.exists(report_path):
            raise AttncheckError(f"{' '.join(cmd)} exited {run.returncode}:\n{run.stderr.strip() or run.stdout[-2000:]}")
        with open(report_path) as f:
            report = json.load(f)
    report["exit_status"] = run.returncode
    report["command"] = cmd
    return report


def _failure_text(law):
    lines = [f"{law['law']}: {law.get('status')}", f"  message: {law.get('message', '')}"]
    if law.get("diagnosis"):
        lines.append(f"  diagnosis: {law['diagnosis']}")
    if law.get("counterexample"):
        lines.append("  shrunk case: " + law["counterexample"].rstrip().replace("\n", "\n    "))
    if law.get("reproduce"):
        lines.append(f"  reproduce: {law['reproduce']}")
    return "\n".join(lines)


def assert_attention(fn_or_target, **kwargs):
    """check(), then AssertionError unless the verdict is pass: the message names each
    failing law with its message, diagnosis, shrunk case and reproduce command.
    Returns the report when it passes."""
    __tracebackhide__ = True  # pytest: the user's test leads the traceback, not this helper
    report = check(fn_or_target, **kwargs)
    impl = report["implementations"][0]
    if impl["verdict"] == "pass":
        return report
    bad = [l for l in impl["laws"] if l["status"] not in ("pass", "skipped")]
    raise AssertionError(f"{impl['name']} is not attention (seed {report['seed']}):\n" +
                         "\n".join(_failure_text(l) for l in bad))
