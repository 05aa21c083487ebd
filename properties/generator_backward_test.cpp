// The generators on backward problems (kBackwardFeature): a law that requires
// the bit gets a dout in every problem, with the value families of v, garbage
// in padding rows and (with STRIDES) gradient views laid out like q's or each
// its own; the forward part of every draw is what the same seed draws
// without the bit; shrinking keeps a required backward bit, makes the
// gradient views dense and dout's rows zero, and ends.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <rapidcheck/gtest.h>

#include "driver/problem_gen.h"
#include "problem/transforms.h"

namespace attncheck {
namespace {

GenOptions backward_options(bool required) {
  GenOptions g;
  g.dtypes = every_dtype();
  g.features = kEveryFeature;
  g.required = required ? kBackwardFeature : 0;
  return g;
}

// The problem without its gradient fields: the forward call a backward problem starts with.
Problem forward_part(Problem p) {
  p.dout.clear();
  p.layouts.dout = p.layouts.dq = p.layouts.dk = p.layouts.dv = TensorLayout{};
  return p;
}

// dout [batch][heads][q_len][value_dim]: representable in the dtype; NaN only in padding rows.
bool dout_values_fit(const Problem& p) {
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t c = 0; c < s.value_dim; ++c) {
        const double x = p.dout[p.out_at(bh, i, c)];
        if (std::isnan(x) ? p.row_exists(bh, i) : round_to(p.dtype, x) != x) return false;
      }
  return true;
}

bool dout_representable(const Problem& p) {
  for (double x : p.dout)
    if (!std::isnan(x) && round_to(p.dtype, x) != x) return false;
  return true;
}

RC_GTEST_PROP(BackwardGenerators, RequiredBackwardProblemsAreConsistent, ()) {
  const Problem p = *gen_problem(backward_options(true));
  RC_ASSERT(p.is_backward());
  RC_ASSERT(p.inconsistency() == "");
  RC_ASSERT(dout_values_fit(p));
}

// The backward bit is drawn last: with it allowed (required or not), every
// seed's forward part is the problem the same seed draws without it, so a
// forward law's cases never move when gradients are offered.
TEST(BackwardGenerators, ForwardPartIsTheSeedsForwardProblem) {
  GenOptions forward = backward_options(false);
  forward.features = kAllFeatures;
  for (bool required : {false, true}) {
    const GenOptions g = backward_options(required);
    int backward = 0;
    for (uint64_t seed = 0; seed < 300; ++seed) {
      const int size = static_cast<int>(seed % 101);
      const Problem p = sample_problem(g, seed, size);
      backward += p.is_backward();
      ASSERT_EQ(problem_fingerprint(forward_part(p)), problem_fingerprint(sample_problem(forward, seed, size)))
          << "seed " << seed << (required ? " (required)" : "");
    }
    if (required) {
      EXPECT_EQ(backward, 300);
    } else {
      EXPECT_GT(backward, 60);   // drawn now and then (0.4) ...
      EXPECT_LT(backward, 240);  // ... and forward problems beside them
    }
  }
  // Without the bit, never a backward problem.
  for (uint64_t seed = 0; seed < 100; ++seed) EXPECT_FALSE(sample_problem(forward, seed).is_backward());
}

// dout's values and views provoke the faults backward kernels have.
TEST(BackwardGenerators, DoutAndGradientViewsCoverTheirCases) {
  const GenOptions g = backward_options(true);
  bool nan_padding = false, huge_padding = false, zero_row = false, like_q = false, own_views = false,
       dout_bshd = false, gradient_gaps = false, v_families = false, dense_gradients = false;
  for (uint64_t seed = 0; seed < 800; ++seed) {
    const Problem p = sample_problem(g, seed, static_cast<int>(seed % 101));
    const Shape& s = p.shape;
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i) {
        const double x = p.dout[p.out_at(bh, i, 0)];
        if (!p.row_exists(bh, i)) {
          nan_padding |= std::isnan(x);
          huge_padding |= std::abs(x) == max_finite(p.dtype);
        } else {
          bool zero = true;
          for (int64_t c = 0; c < s.value_dim; ++c) {
            const double y = p.dout[p.out_at(bh, i, c)];
            zero &= y == 0;
            v_families |= std::isfinite(y) && std::abs(y) > 1e6;
          }
          zero_row |= zero && s.value_dim > 1;
        }
      }
    const ViewLayouts& l = p.layouts;
    if (!l.gradients_dense()) {
      like_q |= l.dout == l.q && l.dq == l.q && l.dk == l.q && l.dv == l.q;
      own_views |= !(l.dout == l.dq) && !(l.dk == l.dv);
    } else {
      dense_gradients = true;
    }
    dout_bshd |= l.dout.order == std::array<uint8_t, 3>{0, 2, 1};
    for (const TensorLayout* t : {&l.dout, &l.dq, &l.dk, &l.dv}) gradient_gaps |= t->gap[0] + t->gap[1] + t->gap[2] > 0;
  }
  EXPECT_TRUE(nan_padding && huge_padding && zero_row);
  EXPECT_TRUE(like_q && own_views && dout_bshd && gradient_gaps && dense_gradients);
  EXPECT_TRUE(v_families) << "dout never drew the wide magnitudes v draws";
  // Without STRIDES, the gradient views stay dense.
  GenOptions no_strides = g;
  no_strides.features &= ~ATTNCHECK_FEATURE_STRIDES;
  for (uint64_t seed = 0; seed < 100; ++seed) EXPECT_TRUE(sample_problem(no_strides, seed).layouts.all_dense());
}

// How complex a backward problem is, compared lexicographically (as
// generator_properties_test.cpp's v2_complexity, the gradient fields added):
// extents, features used (the backward bit among them), structure (layout
// gaps and orders of every view, lengths, windows, broadcast axes), values
// (dout's among them), then the keys the mask hides.
std::array<int64_t, 5> complexity(const Problem& p) {
  const Shape& s = p.shape;
  std::array<int64_t, 5> c{};
  c[0] = s.batch + s.heads + s.q_len + s.kv_len + s.head_dim + s.value_dim;
  c[1] = std::popcount(p.features() & ~ATTNCHECK_FEATURE_CAUSAL) + static_cast<int>(p.causal) +
         (std::isnan(p.scale) ? 0 : 1);
  const ViewLayouts& l = p.layouts;
  for (const TensorLayout* t : {&l.q, &l.k, &l.v, &l.out, &l.dout, &l.dq, &l.dk, &l.dv})
    c[2] += t->gap[0] + t->gap[1] + t->gap[2] + (t->order != std::array<uint8_t, 3>{0, 1, 2});
  c[2] += !p.q_lens.empty() + !p.kv_lens.empty();
  for (std::size_t b = 0; b < p.q_lens.size(); ++b) c[2] += s.q_len - p.q_lens[b];
  for (std::size_t b = 0; b < p.kv_lens.size(); ++b) c[2] += s.kv_len - p.kv_lens[b];
  for (int64_t w : {p.window_left, p.window_right}) c[2] += w >= 0 ? w + 1 : 0;
  for (const Broadcast* b : {&p.mask_broadcast, &p.bias_broadcast}) c[2] += b->per_batch + b->per_head + b->per_row;
  for (const auto* t : {&p.q, &p.k, &p.v, &p.bias, &p.alibi_slopes, &p.sinks, &p.dout})
    for (double x : *t) c[3] += value_complexity(x);
  c[3] += value_complexity(p.softcap);
  for (uint8_t m : p.mask) c[4] += m == 0;
  return c;
}

GenOptions small(GenOptions g) {
  g.max_q_len = g.max_kv_len = g.max_head_dim = g.max_value_dim = 9;
  return g;
}

RC_GTEST_PROP(BackwardGenerators, ShrinksAreConsistentSimplerAndStayBackward, ()) {
  const GenOptions g = small(backward_options(true));
  const Problem p = *gen_problem(g);
  for (const Problem& c : shrink_problem(p, g)) {
    RC_ASSERT(c.is_backward());  // the law requires it
    RC_ASSERT(c.inconsistency() == "");
    // (A padding row's NaN becomes a live row's when lengths shrink to full, as q's does.)
    RC_ASSERT(dout_representable(c));
    RC_ASSERT((c.features() & ~p.features()) == 0u);
    RC_ASSERT(complexity(c) < complexity(p));
  }
}

// A law that allows backward without requiring it may shrink to the forward problem.
TEST(BackwardGenerators, ShrinksOfferTheForwardProblemOnlyWhenNotRequired) {
  for (bool required : {false, true}) {
    const GenOptions g = small(backward_options(required));
    for (uint64_t seed = 0; seed < 60; ++seed) {
      Problem p = sample_problem(backward_options(true), seed, 30);
      bool forward = false;
      for (const Problem& c : shrink_problem(p, g)) forward |= !c.is_backward();
      EXPECT_EQ(forward, !required) << "seed " << seed;
    }
  }
}

// Shrinking all the way (the first candidate that keeps every feature) ends
// small, dout's rows zero and every view dense where nothing needs them.
TEST(BackwardGenerators, ShrinkingEndsAtASmallBackwardProblem) {
  const GenOptions g = small(backward_options(true));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Problem p = sample_problem(g, seed);
    int steps = 0;
    for (bool moved = true; moved && steps < 100000; ++steps) {
      moved = false;
      for (Problem& c : shrink_problem(p, g))
        if (c.features() == p.features()) { p = std::move(c); moved = true; break; }
    }
    EXPECT_LT(steps, 100000) << "seed " << seed;
    EXPECT_TRUE(p.is_backward());
    EXPECT_LE(p.shape.q_len + p.shape.kv_len + p.shape.head_dim + p.shape.value_dim, 4 + 2 * 9) << "seed " << seed;
    // Shrinking for a failure that needs nothing (every candidate "fails"):
    // dout ends all zero, the gradient views dense.
    Problem simplest = sample_problem(g, seed);
    for (std::vector<Problem> cs = shrink_problem(simplest, g); !cs.empty(); cs = shrink_problem(simplest, g))
      simplest = std::move(cs.front());
    EXPECT_TRUE(simplest.layouts.all_dense()) << "seed " << seed;
    for (double x : simplest.dout) EXPECT_EQ(std::bit_cast<uint64_t>(x), 0u) << "seed " << seed;
  }
}

}  // namespace
}  // namespace attncheck
