"""A NumPy reference attention for `attncheck check --python`: passes the default check.

    build/attncheck check --python examples/python/numpy_attention.py:attention

The calling convention (docs/python.md, "The calling convention"):
    q [batch, heads, q_len, head_dim], k [batch, heads, kv_len, head_dim],
    v [batch, heads, kv_len, value_dim], mask bool [batch, heads, q_len, kv_len] or None,
    causal "none" | "top_left" | "bottom_right", scale float or None (1/sqrt(head_dim))
    -> out [batch, heads, q_len, value_dim]
Its gradients are `attention_backward`, attached as attention.attncheck_backward:
    bwd(q, k, v, out, dout, *, mask=None, causal="none", scale=None) -> (dq, dk, dv)
so the gradient laws judge it too. Computed in float64 (the inputs are read-only views
of the checker's memory; f16 comes as float16, bf16 as float32), with a numerically
stable softmax, and zeros for a row that sees no key.
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
def weights(q, k, mask, causal, scale):
    """The softmax weights P, float64 [batch, heads, q_len, kv_len]; a row that sees
    no key is all zeros."""
    head_dim = q.shape[-1]
    s = 1.0 / np.sqrt(head_dim) if scale is None else scale
    q64, k64 = (np.asarray(x, dtype=np.float64) for x in (q, k))
    logits = s * np.einsum("bhid,bhjd->bhij", q64, k64)
    seen = np.broadcast_to(visible_keys(q.shape[2], k.shape[2], causal, mask), logits.shape)
    logits = np.where(seen, logits, -np.inf)
    top = logits.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)  # a row that sees no key: every weight is 0
    w = np.exp(logits - top)
    total = w.sum(axis=-1, keepdims=True)
    return w / np.where(total > 0, total, 1.0)


@np.errstate(over="ignore", invalid="ignore")
def attention(q, k, v, *, mask=None, causal="none", scale=None):
    return np.einsum("bhij,bhjd->bhid", weights(q, k, mask, causal, scale), np.asarray(v, dtype=np.float64))


@np.errstate(over="ignore", invalid="ignore")
def attention_backward(q, k, v, out, dout, *, mask=None, causal="none", scale=None):
    """The gradients of sum(out * dout): (dq [batch, heads, q_len, head_dim],
    dk [batch, heads, kv_len, head_dim], dv [batch, heads, kv_len, value_dim]).

        dV = P^T dO        dP = dO V^T        D = rowsum(dO * O)
        dS = P * (dP - D)  dQ = scale dS K    dK = scale dS^T Q

    O is recomputed in float64 from P and V rather than taken from `out` (the forward's
    result rounded to the call's dtype), so that D carries no rounding of its own. A row
    that sees no key has P = 0, hence dS = 0 and dq = 0; a key no row sees gets dk = dv = 0."""
    s = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    q64, k64, v64, do64 = (np.asarray(x, dtype=np.float64) for x in (q, k, v, dout))
    p = weights(q, k, mask, causal, scale)                 # [b, h, i, j]
    o = np.einsum("bhij,bhjd->bhid", p, v64)               # [b, h, i, value_dim]
    dv = np.einsum("bhij,bhid->bhjd", p, do64)             # [b, h, j, value_dim]
    dp = np.einsum("bhid,bhjd->bhij", do64, v64)           # [b, h, i, j]
    d = (do64 * o).sum(axis=-1, keepdims=True)             # [b, h, i, 1]
    ds = p * (dp - d)
    dq = s * np.einsum("bhij,bhjd->bhid", ds, k64)         # [b, h, i, head_dim]
    dk = s * np.einsum("bhij,bhid->bhjd", ds, q64)         # [b, h, j, head_dim]
    return dq, dk, dv


# The bridge declares a backward for `attention` and calls this for its gradients.
attention.attncheck_backward = attention_backward
