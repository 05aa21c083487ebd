# The Python half of the attncheck Python bridge (plugins/python/): compiled into
# libattncheck_python.so as a string and run once in the embedded interpreter
# as the module `_attncheck_bridge`. The C++ half builds the NumPy arrays over
# the call's memory and writes the results back; this half finds the function,
# reads what it declares, converts torch tensors and words the errors.
# Written for Debian's /usr/bin/python3 (3.11) and its python3-numpy.
import importlib
import importlib.util
import os
import sys
import traceback
import warnings

import numpy as np

# attncheck_features names -> the ABI's ATTNCHECK_FEATURE_* bits (plugin_v2.h, and
# plugin_v3.h for version 3's). A version-3 feature is named here once the bridge passes
# its fields (call_arrays.cpp's keyword table) and the checker judges it: "packed"
# "paged" and "kv_formats" (with fn.attncheck_kv_formats naming the formats), "alibi_batch"
# (alibi_slopes then [batch, heads]) and "broadcast_kv" (no keyword: k and v carry stride 0).
FEATURE_BITS = {
    "gqa": 1 << 2,
    "lengths": 1 << 4,
    "window": 1 << 5,
    "softcap": 1 << 6,
    "bias": 1 << 7,
    "alibi": 1 << 8,
    "sinks": 1 << 9,
    "lse": 1 << 10,
    "packed": 1 << 12,
    "paged": 1 << 11,
    "kv_formats": 1 << 13,
    "alibi_batch": 1 << 14,
    "broadcast_kv": 1 << 16,
}

# attncheck_kv_formats names -> the kv_formats bits (1 << attncheck_kv_format, plugin_v3.h):
# the stored formats of K and V a function with "kv_formats" takes (docs/python.md).
KV_FORMAT_BITS = {name: 1 << f for f, name in enumerate(
    ("dtype", "f16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8", "int4", "q8_0", "q4_0"))}

# attncheck_promises names -> the ABI's ATTNCHECK_PROMISE_* bits (plugin_v3.h).
PROMISE_BITS = {
    "deterministic": 1 << 0,
    "deterministic_backward": 1 << 1,
    "batch_invariant": 1 << 2,
}

_torch = None  # the torch module, imported only for a function that takes tensors


class LoadError(Exception):
    """The target cannot be loaded; the message is the whole reason."""


def _users_frame(f):
    """Whether a traceback frame is the user's: not this runtime's own (the call of
    the function, the import of its file, the conversions) nor importlib's machinery,
    which lead every import error and say nothing about the user's code."""
    return f.filename != _RUNTIME_FILE and not f.filename.startswith("<frozen importlib")


def exception_text(exc, limit):
    """One line for a report: the exception, then its traceback (the user's frames
    only: _users_frame), innermost frame last, within `limit` characters (middle
    frames are dropped first)."""
    head = "".join(traceback.format_exception_only(type(exc), exc)).strip().replace("\n", " | ")
    frames = []
    for f in traceback.extract_tb(exc.__traceback__):
        if not _users_frame(f):
            continue
        where = f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}"
        frames.append(f"{where}: {f.line.strip()}" if f.line else where)
    def text(kept, dropped):
        tb = " | ".join(kept[:1] + ([f"... {dropped} frame(s) ..."] if dropped else []) + kept[1:])
        return f"Python {head} (traceback, most recent call last: {tb})" if kept else f"Python {head}"
    kept, dropped = frames, 0
    while len(text(kept, dropped)) > limit and len(kept) > 2:
        kept = kept[:1] + kept[2:]
        dropped += 1
    out = text(kept, dropped)
    return out if len(out) <= limit else out[: limit - 3] + "..."


# This runtime's own file name as its frames carry it (it is compiled from a string
# named "bridge_runtime.py": plugins/python/interpreter.cpp).
_RUNTIME_FILE = exception_text.__code__.co_filename


def _import_failure(what, exc):
    return LoadError(f"cannot import {what}: {exception_text(exc, 900)}; sys.path = {sys.path!r}")


def load(target):
    """target: MODULE_OR_FILE:FUNCTION. Returns (function, feature bits, takes_torch,
    backward or None, promise bits)."""
    spec, sep, name = target.rpartition(":")
    if not sep or not spec or not name:
        raise LoadError(f"ATTNCHECK_PYTHON_TARGET={target!r} is not MODULE_OR_FILE:FUNCTION "
                        "(e.g. examples/python/numpy_attention.py:attention or mypackage.attn:forward)")
    if spec.endswith(".py"):
        path = os.path.abspath(spec)
        if not os.path.isfile(path):
            raise LoadError(f"cannot import {spec}: no such file ({path}); sys.path = {sys.path!r}")
        # As `python FILE` does: the file's folder first, so its neighbours import.
        sys.path.insert(0, os.path.dirname(path))
        module_name = os.path.splitext(os.path.basename(path))[0]
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException as e:  # SystemExit and KeyboardInterrupt too: a load must not end the host
            raise _import_failure(f"{spec} (as module {module_name!r})", e) from None
    else:
        # As `python -m` does: the working folder first.
        sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(spec)
        except BaseException as e:
            raise _import_failure(f"module {spec!r}", e) from None
    fn = module
    for part in name.split("."):
        if not hasattr(fn, part):
            raise LoadError(f"{spec} has no attribute {name!r} (looked in {getattr(module, '__file__', spec)})")
        fn = getattr(fn, part)
    if not callable(fn):
        raise LoadError(f"{spec}:{name} is a {type(fn).__name__}, not a function")
    backward = _backward(fn, target)
    return (fn, _feature_bits(fn, target), _takes_torch(fn, target), backward, _promise_bits(fn, target, backward),
            _named_bits(fn, target, "attncheck_kv_formats", KV_FORMAT_BITS, "{'int8', 'q8_0'}"))


def _backward(fn, target):
    """fn.attncheck_backward: the function's gradients (docs/python.md,
    "The calling convention"), or None when it has none (the bridge then declares no backward)."""
    bwd = getattr(fn, "attncheck_backward", None)
    if bwd is not None and not callable(bwd):
        raise LoadError(f"{target}: attncheck_backward must be a function "
                        "bwd(q, k, v, out, dout, *, mask=None, causal='none', scale=None, **features) -> (dq, dk, dv), "
                        f"got a {type(bwd).__name__}")
    return bwd


def _named_bits(fn, target, attribute, table, example):
    """The bits of the names in fn.<attribute> (a set of strings), by `table`."""
    declared = getattr(fn, attribute, ())
    if isinstance(declared, str) or not all(isinstance(d, str) for d in declared):
        raise LoadError(f"{target}: {attribute} must be a set of names such as {example}, got {declared!r}")
    unknown = sorted(set(declared) - table.keys())
    if unknown:
        raise LoadError(f"{target}: {attribute} names {unknown}, which the bridge does not know; "
                        f"the names are {sorted(table)}")
    bits = 0
    for d in declared:
        bits |= table[d]
    return bits


def _feature_bits(fn, target):
    return _named_bits(fn, target, "attncheck_features", FEATURE_BITS, "{'gqa', 'lse'}")


def _promise_bits(fn, target, backward):
    """fn.attncheck_promises: what the function asks to be held to bit for bit (docs/python.md)."""
    bits = _named_bits(fn, target, "attncheck_promises", PROMISE_BITS, "{'deterministic'}")
    if bits & PROMISE_BITS["deterministic_backward"] and backward is None:
        raise LoadError(f"{target}: attncheck_promises names 'deterministic_backward', but the function has no "
                        "attncheck_backward to keep it")
    return bits


def _takes_torch(fn, target):
    global _torch
    kind = getattr(fn, "attncheck_tensors", "numpy")
    if kind not in ("numpy", "torch"):
        raise LoadError(f"{target}: attncheck_tensors must be 'numpy' or 'torch', got {kind!r}")
    if kind == "numpy":
        return False
    try:
        import torch
    except BaseException as e:
        raise _import_failure("torch (the function declares attncheck_tensors = 'torch')", e) from None
    import warnings
    # The inputs are read-only NumPy views of the checker's memory; torch.from_numpy
    # shares them and warns that it cannot make them read-only. That is the contract.
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    _torch = torch
    return True


# The warnings the function raised, as "Category: message" -> the number of calls
# that raised it; kept out of the checker's terminal and written for the report to
# $ATTNCHECK_PYTHON_WARNINGS_DIR/warnings.<pid> (one "calls<TAB>text" line each),
# rewritten after each call that warned: the host may be ended at any moment.
_warned = {}
_IGNORED = "The given NumPy array is not writable"  # torch.from_numpy of the read-only inputs: the contract


def call(fn, args, kwargs):
    """fn(*args, **kwargs) with its warnings recorded instead of printed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=_IGNORED)
        try:
            return fn(*args, **kwargs)
        finally:
            if caught:
                _note_warnings(caught)


def _note_warnings(caught):
    for text in {f"{w.category.__name__}: {w.message}".replace("\n", " ")[:300] for w in caught}:
        _warned[text] = _warned.get(text, 0) + 1
    folder = os.environ.get("ATTNCHECK_PYTHON_WARNINGS_DIR")
    if not folder:
        return
    path = os.path.join(folder, f"warnings.{os.getpid()}")
    try:
        with open(path + ".tmp", "w") as f:
            f.writelines(f"{n}\t{t}\n" for t, n in _warned.items())
        os.replace(path + ".tmp", path)
    except OSError:
        pass  # the folder is gone (the run ended): nothing to report to


def to_torch(args, kwargs):
    """The NumPy arguments as torch tensors over the same memory (no copy)."""
    conv = lambda a: _torch.from_numpy(a) if isinstance(a, np.ndarray) else a
    return tuple(conv(a) for a in args), {k: conv(v) for k, v in kwargs.items()}


def to_numpy(x, what):
    """A returned array (NumPy, or a torch.Tensor of any device and float dtype) as
    an ndarray; anything else is a TypeError that names what came back."""
    if isinstance(x, np.ndarray):
        return x
    if _torch is not None or type(x).__module__.split(".")[0] == "torch":
        import torch
        if isinstance(x, torch.Tensor):
            t = x.detach().cpu()
            if t.dtype == torch.bfloat16:  # NumPy has no bfloat16; float32 holds it exactly
                t = t.float()
            return t.numpy()
    raise TypeError(f"the function returned {type(x).__module__}.{type(x).__qualname__} as {what}; "
                    "expected a NumPy array or a torch.Tensor")


def converted(a, dtype):
    """a as a C-contiguous, aligned array of dtype ("float32" or "float64"). A value beyond
    float32's range becomes inf as attncheck's own rounding makes it (gradients of
    large inputs do), without NumPy's overflow warning on the checker's stderr."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.require(a, dtype=dtype, requirements=["C_CONTIGUOUS", "ALIGNED"])
