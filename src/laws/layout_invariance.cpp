// layout_invariance: where the tensors lie in memory changes nothing. The
// same problem through dense [batch][head][row][col] views and through its
// drawn strided layouts (or, when those are dense, [batch][row][head][col]
// views with gaps after every head and row, as FlashAttention takes them)
// gives the same output within each one's bound.
//
// Catches: strides ignored (rows assumed dense, the head stride taken as
// q_len * head_dim), one tensor's strides used for another, an axis order
// assumed. Cannot catch: a layout fault that dense calls share.
#include "law_framework/equivalent_calls.h"
#include "problem/feature_transforms.h"

namespace attncheck {

namespace {

// BSHD with a gap of 3 elements after each head vector and 5 after each row.
ViewLayouts flash_layouts() {
  const TensorLayout bshd{{0, 2, 1}, {0, 3, 5}};
  ViewLayouts v;
  v.q = v.k = v.v = v.out = bshd;
  return v;
}

}  // namespace

Law law_layout_invariance() {
  Law law;
  law.name = "layout_invariance";
  law.statement = "the same problem in dense BHSD, BSHD and padded strided layouts gives the same output";
  law.features = kAllFeatures;
  law.required = ATTNCHECK_FEATURE_STRIDES;
  law.check = [](Implementation& impl, const Problem& p) {
    const Problem dense = with_layouts(p, ViewLayouts{});
    const Problem strided = p.layouts.all_dense() ? with_layouts(p, flash_layouts()) : p;
    return equivalent_calls(impl, dense, strided, "dense", "strided");
  };
  return law;
}

}  // namespace attncheck
