// grad_layout_invariance: where the tensors lie in memory changes no
// gradient. The same backward problem through dense [batch][head][row][col]
// views of all eight tensors (q, k, v, out, dout, dq, dk, dv) and through its
// drawn strided layouts (or, when those are dense, [batch][row][head][col]
// views with gaps after every head and row, as FlashAttention takes them)
// gives the same dq, dk and dv within each one's rounding bound.
//
// Catches: dout read with out's strides (or dense), dq written with q's
// strides assumed dense, dk/dv written with k's head stride, the out handed
// to backward read with the wrong strides (D = rowsum(dO * O) from the wrong
// rows), an axis order assumed for the gradients.
// Cannot catch: a layout fault the dense call shares.
#include "law_framework/grad_support.h"
#include "problem/feature_transforms.h"

namespace attncheck {

namespace {

// BSHD with a gap of 3 elements after each head vector and 5 after each row, for every view.
ViewLayouts flash_layouts() {
  const TensorLayout bshd{{0, 2, 1}, {0, 3, 5}};
  ViewLayouts v;
  v.q = v.k = v.v = v.out = v.dout = v.dq = v.dk = v.dv = bshd;
  return v;
}

}  // namespace

Law law_grad_layout_invariance() {
  Law law;
  law.name = "grad_layout_invariance";
  law.statement = "the same backward problem in dense BHSD, BSHD and padded strided layouts gives the same gradients";
  law.features = kEveryFeature;
  law.required = kBackwardFeature | ATTNCHECK_FEATURE_STRIDES;
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem p = backward_of(drawn);
    const Problem dense = with_layouts(p, ViewLayouts{});
    const Problem strided = p.layouts.all_dense() ? with_layouts(p, flash_layouts()) : p;
    return equivalent_backward_calls(impl, dense, strided, "dense", "strided");
  };
  return law;
}

}  // namespace attncheck
