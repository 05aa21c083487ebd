"""PyTorch 1.13's attention as it is, checked through the Python bridge.

    build/attncheck check --python examples/python/torch_sdpa.py:attention

Calls torch.nn.functional._scaled_dot_product_attention of Debian's python3-torch 1.13.1
(the Python face of the at::_scaled_dot_product_attention that plugins/torch/ wraps in
C++), mapping the calling convention the way the libtorch adapter maps the ABI
(plugins/torch/torch_attention.cpp, docs/torch-findings.md):
  - tensors: torch.Tensors over the checker's memory (attncheck_tensors = "torch");
    bf16 arrives as float32 holding bf16 values (the convention) and is computed in
    float32 (the adapter computes it in torch.bfloat16: the function cannot tell a bf16
    call from an f32 one), rounded back to bf16 by the bridge; f16 is declined (NotImplementedError: 1.13's CPU bmm has
    no Half kernel), as the adapter answers ATTNCHECK_UNSUPPORTED;
  - causal top_left without a mask is is_causal=True; a mask, bottom_right, or
    top_left with a mask become one boolean attn_mask (True = may attend), since 1.13
    refuses is_causal together with attn_mask;
  - scale: 1.13 has none (always 1/sqrt(head_dim)): scale * sqrt(head_dim) is folded
    into q, or into k when that would overflow q; declined when both would.
Expected findings (the adapter's two): fully_masked_rows_zero fails (a row that sees no
key is NaN) and masked_keys_ignored fails (a hidden key whose score overflows adds
+inf + -inf = NaN to its row).
"""
import math

import torch
import torch.nn.functional as F


def _fold_scale(q, k, factor):
    """q * factor, else k * factor when q's fold overflows; None when both would."""
    for i, t in ((0, q), (1, k)):
        folded = t * factor
        if not (torch.isfinite(t) & ~torch.isfinite(folded)).any():
            return (folded, k) if i == 0 else (q, folded)
    return None


def attention(q, k, v, *, mask=None, causal="none", scale=None):
    if q.dtype == torch.float16:
        raise NotImplementedError("torch 1.13 on CPU: \"bmm\" not implemented for 'Half'")
    head_dim = q.shape[-1]
    if scale is not None:
        factor = scale * math.sqrt(head_dim)
        if factor != 1.0:
            folded = _fold_scale(q, k, factor)
            if folded is None:
                raise NotImplementedError("1.13 has no scale argument and folding this scale overflows q and k")
            q, k = folded
    q_len, kv_len = q.shape[2], k.shape[2]
    is_causal = causal == "top_left" and mask is None
    attn_mask = None
    if causal == "top_left" and mask is not None:
        attn_mask = torch.ones(q_len, kv_len, dtype=torch.bool).tril(0) & mask
    elif causal == "bottom_right":
        tri = torch.ones(q_len, kv_len, dtype=torch.bool).tril(kv_len - q_len)
        attn_mask = tri if mask is None else tri & mask
    elif mask is not None:
        attn_mask = mask
    out, _ = F._scaled_dot_product_attention(q, k, v, attn_mask, 0.0, False, is_causal)
    return out


attention.attncheck_tensors = "torch"
