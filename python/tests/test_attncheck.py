"""pytest on the attncheck package (run by CTest as python_package_pytest, with
Debian's /usr/bin/python3 -m pytest). The functions checked are defined here, at
module level, as a user's test file would define them: the bridge imports this file."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
import attncheck  # noqa: E402
from numpy_attention import attention as reference  # noqa: E402

FAST = dict(seed=11, cases=20)


def attention_here(q, k, v, *, mask=None, causal="none", scale=None):
    """A correct attention defined in the test file itself."""
    return reference(q, k, v, mask=mask, causal=causal, scale=scale)


def unscaled_here(q, k, v, *, mask=None, causal="none", scale=None):
    """The founding fault: scale 1 instead of 1/sqrt(head_dim)."""
    return reference(q, k, v, mask=mask, causal=causal, scale=1.0)


def test_check_returns_the_parsed_report():
    report = attncheck.check(attention_here, laws=["matches_oracle", "weights_sum_to_one"], **FAST)
    impl = report["implementations"][0]
    assert report["seed"] == 11 and report["exit_status"] == 0
    assert impl["verdict"] == "pass"
    assert impl["name"].endswith("test_attncheck.py:attention_here")
    assert [l["law"] for l in impl["laws"]] == ["weights_sum_to_one", "matches_oracle"]


def test_assert_attention_passes_a_correct_function():
    attncheck.assert_attention(attention_here, laws=["matches_oracle", "query_sensitivity"], **FAST)


def test_assert_attention_names_the_failing_law_diagnosis_case_and_command():
    with pytest.raises(AssertionError) as failure:
        attncheck.assert_attention(unscaled_here, laws=["default_scale_is_inverse_sqrt_d", "query_sensitivity"],
                                   **FAST)
    text = str(failure.value)
    assert "query_sensitivity: fail" in text
    assert "diagnosis: behaves like: attention without the 1/sqrt(d) scale" in text
    assert "shrunk case: f64 batch=" in text or "shrunk case: f32 batch=" in text
    assert "reproduce: " in text and "--python" in text and "unscaled_here" in text


def test_a_target_text_is_checked_as_given():
    report = attncheck.check(os.path.join(ROOT, "examples", "python", "founding_layer.py:attention"),
                             laws="query_sensitivity", seed=1)
    assert report["implementations"][0]["verdict"] == "fail"


def test_lambdas_and_closures_are_refused_clearly():
    with pytest.raises(TypeError, match="lambda"):
        attncheck.check(lambda q, k, v, **kw: q)

    def nested(q, k, v, **kw):
        return q

    with pytest.raises(TypeError, match="inside another function"):
        attncheck.check(nested)


def test_an_import_error_is_an_attncheck_error_naming_module_and_sys_path():
    with pytest.raises(attncheck.AttncheckError) as failure:
        attncheck.check("no_such_module_for_attncheck:attention")
    assert "exited 2" in str(failure.value)
    assert "no_such_module_for_attncheck" in str(failure.value) and "sys.path" in str(failure.value)


def test_target_of_names_the_defining_file():
    assert attncheck.target_of(attention_here) == os.path.abspath(__file__) + ":attention_here"


def test_a_failure_traceback_leads_with_the_users_test(tmp_path):
    """pytest shows the user's test as where the failure is, not attncheck's helper
    frames (__tracebackhide__ in python/attncheck/_check.py)."""
    user_test = tmp_path / "test_users_own.py"
    user_test.write_text(
        "import sys\n"
        f"sys.path.insert(0, {os.path.join(ROOT, 'python')!r})\n"
        f"sys.path.insert(0, {os.path.join(ROOT, 'examples', 'python')!r})\n"
        "import attncheck\n"
        "from numpy_attention import attention as reference\n"
        "\n"
        "def unscaled(q, k, v, *, mask=None, causal='none', scale=None):\n"
        "    return reference(q, k, v, mask=mask, causal=causal, scale=1.0)\n"
        "\n"
        "def test_mine():\n"
        "    attncheck.assert_attention(unscaled, laws=['query_sensitivity'], seed=11, cases=20)\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(user_test)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "test_users_own.py:11: AssertionError" in out, out
    assert "query_sensitivity: fail" in out, out
    assert "_check.py" not in out and "def assert_attention" not in out, out
