// Drawing and shrinking the ABI v2 fields of a Problem (problem.h, "ABI v2"):
// grouped kv heads, view layouts, per-sequence lengths and the padding they
// leave, windows, soft-capping, the additive bias, ALiBi slopes, sinks, the lse
// request, broadcast masks, and the dout (and gradient layouts) of a backward
// problem. generators.cpp calls these only for the
// features GenOptions::features allows, so that with kV1Features (the
// default) not one extra random number is drawn and every seed draws the
// problem it always drew.
//
// The fuzz targets' families (kSpecials, kRawBits, kFiniteOnly) add their
// values to the soft-cap, bias, slopes, sinks and padding; without them not
// one choice changes.
//
// Each allowed feature is drawn with its own probability (0.35 to 0.5), so a
// run sees each alone and in combination; a required one (GenOptions::required)
// always. The backward bit is drawn last: the forward part of a backward
// problem is the forward problem the same seed draws without that bit.
//
// Example usage (inside draw_problem):
//   if (o.features & ATTNCHECK_FEATURE_GQA) gen::draw_kv_heads(r, max_heads, p.shape);
//   ... q, k, v, mask ...
//   gen::draw_late_features(o, domain.masks, r, p);
#pragma once

#include <cstdint>
#include <vector>

#include "gen/gen_options.h"
#include "gen/choice_source.h"
#include "problem/problem.h"

namespace attncheck::gen {

// Features beyond a v1 call's (anything but MASK and CAUSAL) are allowed: the
// generators may then also broadcast masks over batch, heads or rows.
inline bool draws_v2(const GenOptions& o) { return (o.features & ~kV1Features) != 0; }

// With probability 0.45 (always when `required`), makes s grouped-query:
// kv_heads a proper divisor of heads (1, multi-query, a third of the time).
// Three times in four the call first gets 4, 6 or 8 query heads, past a
// max_heads below 8: fewer heads cannot tell a right grouping from a wrong
// one. A single head is otherwise raised to 2..max_heads. Draw before k and v
// are sized.
template <class C>
void draw_kv_heads(C& r, int64_t max_heads, Shape& s, bool required = false);

// Which of batch, heads and rows a mask or bias varies along (each kept with
// probability 0.6; rows always broadcast when `rows` is false).
template <class C>
Broadcast draw_broadcast(C& r, bool rows);

// The extents a tensor stored with `how` has: [batch'][heads'][q_len'][kv_len]
// with each broadcast axis 1 (what draw_mask fills for a broadcast mask).
Shape stored_extents(const Shape& s, const Broadcast& how);

// Everything of v2 drawn after q, k, v and the mask, each within o.features:
// layouts (STRIDES), q_lens/kv_lens with NaN or huge padding (LENGTHS), window
// (WINDOW), softcap (SOFTCAP), bias and its broadcast (BIAS; full over rows only
// when `dense_ok`, the shape domain's masks flag), ALiBi slopes (ALIBI), sinks
// (SINKS), lse_requested (LSE), and last dout with its padding rows garbage
// and the gradient layouts (kBackwardFeature; the layouts only with STRIDES).
// p stays consistent. `broadcast_bias` (a bug-report shape, generators.cpp):
// a bias is drawn whenever BIAS is allowed, broadcast over the batch.
template <class C>
void draw_late_features(const GenOptions& o, bool dense_ok, C& r, Problem& p, bool broadcast_bias = false);

// (Defined in feature_draws.cpp for the two choice sources.)
extern template void draw_kv_heads(RandomChoices&, int64_t, Shape&, bool);
extern template void draw_kv_heads(ByteChoices&, int64_t, Shape&, bool);
extern template Broadcast draw_broadcast(RandomChoices&, bool);
extern template Broadcast draw_broadcast(ByteChoices&, bool);
extern template void draw_late_features(const GenOptions&, bool, RandomChoices&, Problem&, bool);
extern template void draw_late_features(const GenOptions&, bool, ByteChoices&, Problem&, bool);

// Shrink candidates of the v2 fields, most drastic first: each feature
// dropped, then simpler forms (dense layouts, full lengths, smaller windows,
// broadcast bias and masks, simpler softcap, slopes, sinks). Only ever removes
// or simplifies, so every candidate stays within the features p uses. Nothing
// for a problem that uses no v2 field (v1 shrinking is unchanged).
void shrink_features(const Problem& p, std::vector<Problem>& out);

// Shrink candidates of a backward problem's own fields: dout dropped (a
// forward problem) unless `required` has kBackwardFeature, the gradient
// layouts made dense, then dout's rows zeroed one at a time (its values are
// simplified with q's, k's and v's by shrink_problem). Nothing for a forward problem.
void shrink_gradients(const Problem& p, FeatureBits required, std::vector<Problem>& out);

}  // namespace attncheck::gen
