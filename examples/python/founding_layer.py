"""The founding case's layer (docs/founding-case.md) ported to NumPy: unscaled scores.

    build/attncheck check --python examples/python/founding_layer.py:attention

The C# layer computes one query row against a context: preSoftMax[i] = Q . K[i], then
an ordinary softmax and the weighted sum of the V rows. It never divides the scores by
sqrt(qkvSize), so for large head_dim the softmax saturates and the output stops
following the input: attncheck fails it on query_sensitivity, with the diagnosis of the
missing 1/sqrt(head_dim). Like plugins/seed_layer/seed_layer.c, the port keeps the
fault (it ignores `scale`: the layer has no notion of one) and adds only what the
calling convention needs: batch, heads and query rows, the causal rule and the mask
(a hidden key gets no weight), and zeros for a row that sees no key.
"""
import numpy as np


def softmax(x):
    """Functions.SoftMax: an ordinary softmax over the last axis ("tested on its own and
    fine"), stable form; -inf scores get weight 0, a row of only -inf gets zeros."""
    top = x.max(axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


@np.errstate(over="ignore", invalid="ignore")  # huge inputs overflow, as in numpy_attention.py
def attention(q, k, v, *, mask=None, causal="none", scale=None):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    q_len, kv_len = q.shape[2], k.shape[2]
    pre_softmax = np.einsum("bhid,bhjd->bhij", q, k)  # Q . K[i], never divided by sqrt(qkvSize)
    pre_softmax = pre_softmax  # the no-op loop left in the original
    # ADDED for the calling convention: keys a query may not see.
    i, j = np.arange(q_len)[:, None], np.arange(kv_len)[None, :]
    seen = {"top_left": j <= i, "bottom_right": j <= i + kv_len - q_len}.get(causal, np.ones((q_len, kv_len), bool))
    if mask is not None:
        seen = seen & mask
    post_softmax = softmax(np.where(seen, pre_softmax, -np.inf))
    return np.einsum("bhij,bhjd->bhid", post_softmax, v)  # output[j] += V[i][j] * postSoftMax[i]
