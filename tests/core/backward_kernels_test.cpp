// The references' backward through ABI v2 (reference, naive, online), called
// directly on calls built by hand (hand_built_grad_call.h): each v2 feature
// alone and all together, against central differences of the spec's forward
// (long double) elementwise on small problems and along random directions on
// larger ones (several query blocks and key tiles), and against each other;
// in f64, f32 and the widened f16/bf16 path. Padding and gaps of dq, dk, dv
// never written, every input (out and lse included) left as it was, NaN in
// padding never read into a result, gradients overwritten, rows that see no
// key get dq = 0 and keys that no row sees dk = dv = 0.
// Seed: ATTNCHECK_SEED (printed).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "driver/seed_env.h"
#include "impls/kernels.h"
#include "parallel/parallel_for.h"
#include "hand_built_grad_call.h"

namespace attncheck {
namespace {

using namespace testing_v2;

uint64_t test_seed() {
  static const uint64_t seed = [] {
    const uint64_t s = seed_from_env_or(20261201);
    std::printf("backward_kernels_test: ATTNCHECK_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

struct Reference {
  const char* name;
  ForwardV2 forward;
  BackwardV2 backward;
};
const Reference kReferences[] = {{"reference", reference_forward_v2, reference_backward_v2},
                                 {"naive", naive_forward_v2, naive_backward_v2},
                                 {"online", online_forward_v2, online_backward_v2}};

struct Named {
  std::string name;
  CallSpec spec;
  GradLayouts layouts;
};

// Small problems (elementwise central differences are affordable): each
// feature alone, then all of them at once.
std::vector<Named> feature_cases(DType dtype) {
  CallSpec base;
  base.dtype = dtype;
  base.batch = 2, base.heads = 4, base.kv_heads = 4, base.q_len = 6, base.kv_len = 9, base.head_dim = 4,
  base.value_dim = 3;
  std::vector<Named> cases;
  const auto add = [&](std::string name, auto change) {
    Named n{std::move(name), base, {}};
    change(n);
    cases.push_back(std::move(n));
  };
  add("plain", [](Named&) {});
  add("gqa", [](Named& n) { n.spec.kv_heads = 2; });
  add("gqa_one_kv_head", [](Named& n) { n.spec.kv_heads = 1; });
  add("strides", [](Named& n) {
    n.spec.q = {true, 1, 2, 3};
    n.spec.k = {false, 2, 0, 1};
    n.spec.v = {true, 0, 1, 0};
    n.spec.out = {true, 3, 1, 2};
    n.layouts = {{true, 1, 0, 2}, {true, 2, 1, 0}, {false, 1, 3, 0}, {true, 0, 2, 5}};
  });
  add("lengths", [](Named& n) { n.spec.q_lens = {4, 6}, n.spec.kv_lens = {9, 5}; });
  add("lengths_empty", [](Named& n) { n.spec.q_lens = {0, 6}, n.spec.kv_lens = {9, 0}; });
  add("window", [](Named& n) { n.spec.window_left = 2, n.spec.window_right = 1; });
  add("softcap", [](Named& n) { n.spec.softcap = 0.7, n.spec.scale = 1.5; });
  add("bias", [](Named& n) { n.spec.bias = true; });
  add("bias_broadcast", [](Named& n) { n.spec.bias = true, n.spec.bias_varies = {false, true, false}; });
  add("alibi", [](Named& n) { n.spec.alibi_slopes = {0.5f, 0.25f, 0.125f, 0.0625f}; });
  add("sinks", [](Named& n) { n.spec.sinks = {0.5f, -1.0f, 2.0f, 0.0f}; });
  add("lse", [](Named& n) { n.spec.lse = true; });
  add("mask", [](Named& n) { n.spec.mask = true; });
  add("causal_top_left", [](Named& n) { n.spec.causal = ATTNCHECK_CAUSAL_TOP_LEFT; });
  add("causal_bottom_right", [](Named& n) { n.spec.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT; });
  const auto all = [](Named& n) {
    n.spec.kv_heads = 2;
    n.spec.q = {true, 1, 2, 3}, n.spec.v = {true, 0, 1, 0}, n.spec.out = {true, 3, 1, 2};
    n.layouts = {{true, 1, 0, 2}, {true, 2, 1, 0}, {false, 1, 3, 0}, {true, 0, 2, 5}};
    n.spec.q_lens = {5, 6}, n.spec.kv_lens = {9, 7};
    n.spec.window_left = 3, n.spec.window_right = 2;
    n.spec.softcap = 0.8, n.spec.scale = 1.25;
    n.spec.bias = true, n.spec.mask = true;
    n.spec.alibi_slopes = {0.5f, 0.25f, 0.125f, 0.0625f};
    n.spec.sinks = {0.5f, -1.0f, 2.0f, 0.0f};
    n.spec.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT;
  };
  add("all_with_lse", [&](Named& n) { all(n), n.spec.lse = true; });
  add("all_without_lse", [&](Named& n) { all(n), n.spec.lse = false; });
  return cases;
}

// |got - want| allowed against central differences (and between two
// references): f64 by the differences' own error (~1e-11 here); f32 by
// float's over these few keys (~1e-7); f16/bf16 by the stores' rounding and
// by D_i = dO . O taken from the rounded out (naive, online): ~2e-4 and ~2e-3.
// Each about 5 to 40 times the worst seen (printed).
double tolerance(DType t, double want) {
  switch (t) {
    case DType::f64: return 1e-9 * (1 + std::abs(want));
    case DType::f32: return 2e-6 * (1 + std::abs(want));
    case DType::f16: return 1e-3 * (1 + std::abs(want));
    case DType::bf16: return 8e-3 * (1 + std::abs(want));
  }
  return 0;
}

// The largest |got - want| / tolerance seen by mismatch(), per dtype: printed
// at the end of each dtype's test, so that a tolerance never approached shows.
double worst_ratio[4] = {0, 0, 0, 0};

// "" when got matches want at every live element (NaN in want: padding, not compared).
std::string mismatch(const char* tensor, const std::vector<double>& got, const std::vector<double>& want, DType t,
                     double factor = 1) {
  if (got.size() != want.size()) return std::string(tensor) + ": sizes differ";
  for (std::size_t n = 0; n < want.size(); ++n) {
    if (std::isnan(want[n])) continue;
    double& worst = worst_ratio[static_cast<int>(t)];
    worst = std::max(worst, std::abs(got[n] - want[n]) / (factor * tolerance(t, want[n])));
    if (!(std::abs(got[n] - want[n]) <= factor * tolerance(t, want[n])))
      return std::string(tensor) + "[" + std::to_string(n) + "] = " + std::to_string(got[n]) + ", expected " +
             std::to_string(want[n]);
  }
  return "";
}

void expect_grads_match(const Grads& got, const Grads& want, DType t, const std::string& what, double factor = 1) {
  EXPECT_EQ(mismatch("dq", got.dq, want.dq, t, factor), "") << what;
  EXPECT_EQ(mismatch("dk", got.dk, want.dk, t, factor), "") << what;
  EXPECT_EQ(mismatch("dv", got.dv, want.dv, t, factor), "") << what;
}

void check_features(DType dtype) {
  std::mt19937_64 rng(test_seed() + static_cast<uint64_t>(dtype));
  worst_ratio[static_cast<int>(dtype)] = 0;
  for (const Named& n : feature_cases(dtype)) {
    GradCall t = make_grad_call(n.spec, n.layouts, rng);
    const Grads fd = central_differences(t);
    std::vector<Grads> all;
    for (const Reference& r : kReferences) {
      const std::string what = std::string(r.name) + " on " + n.name;
      Grads g = run_forward_backward(t, r.forward, r.backward);
      EXPECT_EQ(g.problems, "") << what;
      if (!g.problems.empty()) continue;
      expect_grads_match(g, fd, dtype, what + " against central differences");
      all.push_back(std::move(g));
    }
    for (std::size_t a = 1; a < all.size(); ++a)
      expect_grads_match(all[a], all[0], dtype, std::string(kReferences[a].name) + " against reference on " + n.name);
  }
  std::printf("backward_kernels_test: %s: worst |error| / tolerance %.3g\n", std::string(dtype_name(dtype)).c_str(),
              worst_ratio[static_cast<int>(dtype)]);
}

TEST(BackwardKernels, EachFeatureAgainstCentralDifferencesF64) { check_features(DType::f64); }
TEST(BackwardKernels, EachFeatureAgainstCentralDifferencesF32) { check_features(DType::f32); }
TEST(BackwardKernels, EachFeatureAgainstCentralDifferencesF16) { check_features(DType::f16); }
TEST(BackwardKernels, EachFeatureAgainstCentralDifferencesBF16) { check_features(DType::bf16); }

// Larger problems: 3 query blocks and 3 key tiles of online's, lengths that
// end inside them, GQA; central differences along random directions.
TEST(BackwardKernels, ManyTilesAlongRandomDirections) {
  std::mt19937_64 rng(test_seed() + 100);
  std::normal_distribution<double> normal;
  for (const bool features : {false, true})
    for (const DType dtype : {DType::f64, DType::f32}) {
      CallSpec s;
      s.dtype = dtype;
      s.batch = 2, s.heads = 4, s.kv_heads = 2, s.q_len = 37, s.kv_len = 75, s.head_dim = 8, s.value_dim = 5;
      s.q_lens = {37, 20}, s.kv_lens = {75, 40};
      if (features) {
        s.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT, s.window_left = 30, s.softcap = 1.5, s.bias = true;
        s.alibi_slopes = {0.1f, 0.05f, 0.02f, 0.01f}, s.sinks = {1.0f, 0.0f, -1.0f, 2.0f}, s.lse = true;
        s.mask = true;
      }
      GradCall t = make_grad_call(s, {}, rng);
      std::vector<Grads> all;
      for (const Reference& r : kReferences) {
        Grads g = run_forward_backward(t, r.forward, r.backward);
        ASSERT_EQ(g.problems, "") << r.name;
        for (const char tensor : {'q', 'k', 'v'}) {
          const std::vector<double>& grad = tensor == 'q' ? g.dq : tensor == 'k' ? g.dk : g.dv;
          std::vector<double> dir(grad.size(), 0.0);
          double predicted = 0, magnitude = 0;
          for (std::size_t n = 0; n < grad.size(); ++n) {
            if (std::isnan(grad[n])) continue;  // padding
            dir[n] = normal(rng);
            predicted += grad[n] * dir[n];
            magnitude += std::abs(grad[n] * dir[n]);
          }
          const double fd = directional_difference(t, tensor, dir);
          const double tol = (dtype == DType::f64 ? 1e-8 : 1e-4) * (1 + magnitude);
          EXPECT_NEAR(predicted, fd, tol) << r.name << " d" << tensor << (features ? " with features" : "");
        }
        all.push_back(std::move(g));
      }
      for (std::size_t a = 1; a < all.size(); ++a)
        expect_grads_match(all[a], all[0], dtype, std::string(kReferences[a].name) + " against reference");
    }
}

// NaN everywhere in padding and gaps (make_test_call, make_grad_call): no NaN in a result.
TEST(BackwardKernels, NaNInPaddingNeverReachesAGradient) {
  std::mt19937_64 rng(test_seed() + 200);
  for (const DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16})
    for (const Named& n : feature_cases(dtype)) {
      if (n.name.rfind("lengths", 0) != 0 && n.name.rfind("all", 0) != 0) continue;
      GradCall t = make_grad_call(n.spec, n.layouts, rng);
      for (const Reference& r : kReferences) {
        const Grads g = run_forward_backward(t, r.forward, r.backward);
        ASSERT_EQ(g.problems, "") << r.name << " on " << n.name;
        const auto live_finite = [&](const std::vector<double>& x, int64_t heads, int64_t rows, int64_t cols,
                                     bool by_keys) {
          for (int64_t b = 0; b < n.spec.batch; ++b)
            for (int64_t h = 0; h < heads; ++h)
              for (int64_t i = 0; i < (by_keys ? t.fwd.lk(b) : t.fwd.lq(b)); ++i)
                for (int64_t c = 0; c < cols; ++c)
                  if (!std::isfinite(x[static_cast<std::size_t>(((b * heads + h) * rows + i) * cols + c)])) return false;
          return true;
        };
        const CallSpec& s = n.spec;
        EXPECT_TRUE(live_finite(g.dq, s.heads, s.q_len, s.head_dim, false)) << r.name << " dq on " << n.name;
        EXPECT_TRUE(live_finite(g.dk, s.kv_heads, s.kv_len, s.head_dim, true)) << r.name << " dk on " << n.name;
        EXPECT_TRUE(live_finite(g.dv, s.kv_heads, s.kv_len, s.value_dim, true)) << r.name << " dv on " << n.name;
      }
    }
}

bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t n = 0; n < a.size(); ++n)
    if (!(a[n] == b[n] || (std::isnan(a[n]) && std::isnan(b[n]))) || std::signbit(a[n]) != std::signbit(b[n]))
      return false;
  return true;
}

// Gradients are overwritten: live elements prefilled with garbage give the
// same result, bit for bit, as prefilled with NaN.
TEST(BackwardKernels, GradientsAreOverwritten) {
  std::mt19937_64 rng(test_seed() + 300);
  for (const DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    const std::vector<Named> cases = feature_cases(dtype);
    for (const Named& n : {cases.front(), cases.back()}) {
      GradCall t = make_grad_call(n.spec, n.layouts, rng);
      for (const Reference& r : kReferences) {
        const Grads poisoned = run_forward_backward(t, r.forward, r.backward);
        const double garbage = 1234.5;
        const Grads prefilled = run_forward_backward(t, r.forward, r.backward, &garbage);
        ASSERT_EQ(poisoned.problems, "") << r.name;
        ASSERT_EQ(prefilled.problems, "") << r.name;
        EXPECT_TRUE(bitwise_equal(poisoned.dq, prefilled.dq)) << r.name << " dq on " << n.name;
        EXPECT_TRUE(bitwise_equal(poisoned.dk, prefilled.dk)) << r.name << " dk on " << n.name;
        EXPECT_TRUE(bitwise_equal(poisoned.dv, prefilled.dv)) << r.name << " dv on " << n.name;
      }
    }
  }
}

// Rows that see no key get dq = 0 exactly; keys that no row sees dk = dv = 0.
TEST(BackwardKernels, NothingFlowsWhereNothingIsSeen) {
  std::mt19937_64 rng(test_seed() + 400);
  CallSpec s;
  s.dtype = DType::f32;
  s.batch = 2, s.heads = 4, s.kv_heads = 2, s.q_len = 6, s.kv_len = 9, s.head_dim = 4, s.value_dim = 3;
  // Top-left causal with q_len < kv_len: keys 6..8 are seen by no row; the mask
  // hides every key from row 1 of head 3 of batch 0; batch 1 has no keys at all.
  s.causal = ATTNCHECK_CAUSAL_TOP_LEFT;
  s.mask = true;
  s.kv_lens = {9, 0};
  for (const bool sinks : {false, true}) {
    if (sinks) s.sinks = {0.5f, -1.0f, 2.0f, 0.0f};
    for (const bool lse : {false, true}) {
      s.lse = lse;
      GradCall t = make_grad_call(s, {}, rng);
      const std::vector<uint8_t>& mask = t.fwd.mask;  // [batch][heads][q_len][kv_len]
      for (const Reference& r : kReferences) {
        const Grads g = run_forward_backward(t, r.forward, r.backward);
        ASSERT_EQ(g.problems, "") << r.name;
        for (int64_t b = 0; b < s.batch; ++b)
          for (int64_t h = 0; h < s.heads; ++h)
            for (int64_t i = 0; i < s.q_len; ++i) {
              bool sees = false;
              for (int64_t j = 0; j < t.fwd.lk(b) && j <= i; ++j) sees |= mask[((b * s.heads + h) * s.q_len + i) * s.kv_len + j] != 0;
              if (sees) continue;
              for (int64_t d = 0; d < s.head_dim; ++d) {
                const double x = g.dq[static_cast<std::size_t>(((b * s.heads + h) * s.q_len + i) * s.head_dim + d)];
                EXPECT_TRUE(x == 0 && !std::signbit(x)) << r.name << " dq of blind row " << b << "," << h << "," << i << " = " << x;
              }
            }
        for (int64_t kvh = 0; kvh < s.kv_heads; ++kvh)
          for (int64_t j = s.q_len; j < t.fwd.lk(0); ++j) {
            for (int64_t d = 0; d < s.head_dim; ++d)
              EXPECT_EQ(g.dk[static_cast<std::size_t>((kvh * s.kv_len + j) * s.head_dim + d)], 0.0) << r.name << " dk key " << j;
            for (int64_t c = 0; c < s.value_dim; ++c)
              EXPECT_EQ(g.dv[static_cast<std::size_t>((kvh * s.kv_len + j) * s.value_dim + c)], 0.0) << r.name << " dv key " << j;
          }
      }
    }
  }
}

// online splits its two passes across threads; each gradient element is
// computed by one thread in a fixed order, so the thread count changes no bit.
TEST(BackwardKernels, OnlineIsTheSameOnOneThreadAndOnSeveral) {
  std::mt19937_64 rng(test_seed() + 600);
  CallSpec s;
  s.batch = 1, s.heads = 4, s.kv_heads = 2, s.q_len = 130, s.kv_len = 140, s.head_dim = 32, s.value_dim = 16;
  s.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT, s.sinks = {0.5f, -1.0f, 2.0f, 0.0f};
  GradCall t = make_grad_call(s, {}, rng);
  Grads one, several;
  {
    ScopedComputeThreads limit(1);
    one = run_forward_backward(t, online_forward_v2, online_backward_v2);
  }
  {
    ScopedComputeThreads limit(4);
    several = run_forward_backward(t, online_forward_v2, online_backward_v2);
  }
  ASSERT_EQ(one.problems, "");
  ASSERT_EQ(several.problems, "");
  EXPECT_EQ(one.dq, several.dq);
  EXPECT_EQ(one.dk, several.dk);
  EXPECT_EQ(one.dv, several.dv);
}

TEST(BackwardKernels, InvalidGradViewsAreRefused) {
  std::mt19937_64 rng(test_seed() + 500);
  CallSpec s;
  s.batch = 1, s.heads = 2, s.kv_heads = 2, s.q_len = 3, s.kv_len = 4, s.head_dim = 2, s.value_dim = 2;
  GradCall t = make_grad_call(s, {}, rng);
  const attncheck_call_v2& call = t.fwd.enc.call;
  char err[256];
  for (const Reference& r : kReferences) {
    const auto refused = [&](const attncheck_grad* g, const char* words) {
      err[0] = 0;
      EXPECT_EQ(r.backward(&call, g, err, sizeof err), 2) << r.name << ": " << words;
      EXPECT_NE(std::string(err).find(words), std::string::npos) << r.name << ": " << err;
    };
    refused(nullptr, "grad is NULL");
    attncheck_grad g = t.grad;
    g.dk.data = nullptr;
    refused(&g, "must not be NULL");
    g = t.grad;
    g.dout.stride[2] = -1;
    refused(&g, "dout has a negative stride");
    g = t.grad;
    g.dv.stride[3] = 2;
    refused(&g, "dv.stride[3] must be 1");
    g = t.grad;
    g.dq.stride[1] = int64_t(1) << 62;  // (heads - 1) * stride[1] past what any buffer holds
    refused(&g, "dq's strides overflow");
    EXPECT_EQ(r.backward(nullptr, &t.grad, err, sizeof err), 2) << r.name;
  }
}

}  // namespace
}  // namespace attncheck
