// Pieces the gradient laws share: running a backward call, naming a gradient
// element in messages, and comparing two calls' gradients within each one's
// rounding bound (oracle/grad_rounding.h).
#pragma once

#include <optional>
#include <string>

#include "oracle/grad_rounding.h"
#include "law_framework/law_support.h"

namespace attncheck {

// The three gradients, in the order messages name them.
enum class GradTensor { dq, dk, dv };
const char* grad_tensor_name(GradTensor t);
const std::vector<double>& grad_of(const Outcome& o, GradTensor t);
std::vector<double>& grad_of(Outcome& o, GradTensor t);
const std::vector<double>& bound_of(const GradBounds& b, GradTensor t);

// "dk[b=0][kvh=1][j=2][d=0]" for a flat index of dq ([batch][heads][q_len][head_dim]),
// dk ([batch][kv_heads][kv_len][head_dim]) or dv ([..][kv_len][value_dim]).
std::string grad_element(const Problem& p, GradTensor t, int64_t flat);

// The problem as a backward problem: p itself when it has a dout; else p with
// a dout of unit Gaussians rounded to its dtype, drawn from its fingerprint
// (NaN in padding rows), so that a gradient law given a forward problem (a
// forward case file, a generator that draws none) judges the same backward
// problem every time. The generators draw dout for the gradient laws
// (GenOptions::required has kBackwardFeature): this is the fallback.
Problem backward_of(const Problem& p);

// Runs impl on the backward problem p: nullopt when the outcome is usable (out
// and the three gradients filled, `o` holds them); else the verdict the law
// returns (not applicable for a forward problem, unsupported, fault, fail).
std::optional<Verdict> run_backward(Implementation& impl, const Problem& p, Outcome& o);

// The gradients of a call and their bounds: what a comparison takes.
struct GradRun {
  Outcome outcome;
  GradMagnitudes magnitudes;
  GradBounds bounds;
};
// run_backward, then the magnitudes and the bounds of `model` for its outcome.
std::optional<Verdict> run_backward_bounded(Implementation& impl, const Problem& p, GradRun& run,
                                            GradErrorModel model = {});

// Gradients a and b of the same shapes (expected[] and tolerances computed by
// the caller, e.g. moved by a permutation) agree elementwise within
// tol_a + tol_b (inf: not judged; NaN in either where judged: a mismatch,
// bitwise equal values always agree). The message of the worst mismatch over
// the three tensors, or nullopt. `judged` counts the judged elements.
std::optional<std::string> grad_mismatch(const Problem& p, const Outcome& a, const GradBounds& tol_a, const Outcome& b,
                                         const GradBounds& tol_b, const char* name_a, const char* name_b,
                                         int64_t& judged);

// Runs both backward problems (same gradient shapes) and compares their
// gradients within the sum of their bounds: pass, fail, or not applicable
// when no element was judged.
Verdict equivalent_backward_calls(Implementation& impl, const Problem& a, const Problem& b, const char* name_a,
                                  const char* name_b);

}  // namespace attncheck
