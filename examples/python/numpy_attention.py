"""A NumPy reference attention for `attncheck check --python`: passes the default check.

    build/attncheck check --python examples/python/numpy_attention.py:attention

The calling convention (README, "Check a Python function"):
    q [batch, heads, q_len, head_dim], k [batch, heads, kv_len, head_dim],
    v [batch, heads, kv_len, value_dim], mask bool [batch, heads, q_len, kv_len] or None,
    causal "none" | "top_left" | "bottom_right", scale float or None (1/sqrt(head_dim))
    -> out [batch, heads, q_len, value_dim]
Computed in float64 (the inputs are read-only views of the checker's memory; f16 comes
as float16, bf16 as float32), with a numerically stable softmax, and zeros for a row
that sees no key.
"""
import numpy as np


def visible_keys(q_len, kv_len, causal, mask):
    """bool [.., q_len, kv_len]: key j is visible to query i."""
    i = np.arange(q_len)[:, None]
    j = np.arange(kv_len)[None, :]
    if causal == "top_left":
        allowed = j <= i
    elif causal == "bottom_right":
        allowed = j <= i + kv_len - q_len
    else:
        allowed = np.ones((q_len, kv_len), dtype=bool)
    return allowed if mask is None else allowed & mask


# The checker draws inputs up to the dtype's largest values, where q.k overflows to
# inf (then inf - inf is NaN, as the exact result is unrepresentable too): NumPy's
# warnings about it would only repeat on stderr what the laws judge.
@np.errstate(over="ignore", invalid="ignore")
def attention(q, k, v, *, mask=None, causal="none", scale=None):
    head_dim = q.shape[-1]
    s = 1.0 / np.sqrt(head_dim) if scale is None else scale
    q64, k64, v64 = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    # [batch, heads, q_len, kv_len]
    logits = s * np.einsum("bhid,bhjd->bhij", q64, k64)
    seen = np.broadcast_to(visible_keys(q.shape[2], k.shape[2], causal, mask), logits.shape)
    logits = np.where(seen, logits, -np.inf)
    top = logits.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)  # a row that sees no key: every weight is 0
    weights = np.exp(logits - top)
    total = weights.sum(axis=-1, keepdims=True)
    weights = weights / np.where(total > 0, total, 1.0)
    return np.einsum("bhij,bhjd->bhid", weights, v64)
