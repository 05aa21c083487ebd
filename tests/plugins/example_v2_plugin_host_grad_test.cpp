// The v2 example plugin's backward through the checker's plugin host (the child
// process, the shared region's guarded gradient zones, forward's out and lse kept out
// of the plugin's reach), as `attncheck check` calls it: it declares backward, and on
// problems drawn with every feature (sample_problem: Gaussian and small-integer
// values, random strided layouts of every tensor, gradients included) it makes no
// process fault (no write into a gap, padding, out or lse; every live element written)
// and its dq, dk, dv are the built-in reference's f64 backward on the same values,
// rounded once to the dtype (the example computes in double and rounds once; the
// reference's own f32 answer may be farther off: it computes the logits in float, and a
// bias of -1e4 costs it 1e-4). Two independent backwards agreeing is the check here;
// the gradient laws judge either against the oracle. Seeded from ATTNCHECK_SEED,
// default 20261130.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "driver/seed_env.h"
#include "impls/in_process.h"
#include "host/plugin_host.h"
#include "gen/generators.h"
#include "problem/problem.h"

#ifndef ATTNCHECK_EXAMPLE_V2_PLUGIN
#error "ATTNCHECK_EXAMPLE_V2_PLUGIN must name the example v2 plugin"
#endif

namespace attncheck {
namespace {

uint64_t test_seed() { return seed_from_env_or(20261130u); }

// ATTNCHECK_EXAMPLE_V2_PLUGIN in the environment loads another build of it (a
// deliberately broken copy, to see this test fail).
std::unique_ptr<Implementation> load_example() {
  std::string error;
  const char* path = std::getenv("ATTNCHECK_EXAMPLE_V2_PLUGIN");
  auto impl = load_plugin(path ? path : ATTNCHECK_EXAMPLE_V2_PLUGIN, {}, error);
  EXPECT_TRUE(impl) << error;
  return impl;
}

// A random layout of a view: dense half of the time, else any axis order with gaps.
TensorLayout random_layout(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  if (pick(0, 1) == 0) return {};
  TensorLayout l;
  std::shuffle(l.order.begin(), l.order.end(), rng);
  l.gap = {pick(0, 2), pick(0, 2), pick(0, 2)};
  return l;
}

// A forward problem drawn with every ABI v2 feature, made a backward one: dout drawn
// as q is (padding rows hold garbage as q's do: NaN, which must not leak), and the
// gradient views given their own layouts.
Problem backward_problem(uint64_t seed) {
  GenOptions opts;
  opts.dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  opts.features = kAllFeatures;
  opts.families = kGaussian | kSmallInts;
  opts.max_q_len = opts.max_kv_len = 9;
  opts.max_head_dim = opts.max_value_dim = 6;
  Problem p = sample_problem(opts, seed, 60);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss;
  p.dout.resize(static_cast<std::size_t>(p.shape.out_size()));
  for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
    for (int64_t i = 0; i < p.shape.q_len; ++i)
      for (int64_t c = 0; c < p.shape.value_dim; ++c)
        p.dout[static_cast<std::size_t>(p.out_at(bh, i, c))] =
            p.row_exists(bh, i) ? round_to(p.dtype, gauss(rng)) : std::nan("");
  p.layouts.dout = random_layout(rng);
  p.layouts.dq = random_layout(rng);
  p.layouts.dk = random_layout(rng);
  p.layouts.dv = random_layout(rng);
  return p;
}

// Allowed |example - reference in f64| for an element: the example's one rounding to
// the dtype (half a unit in the last place), f16's subnormal spacing, and both
// computations' double rounding (1e-9 of the tensor's largest element: logits reach
// 1e4 with the generators' biases).
double half_ulp(DType t) {
  switch (t) {
    case DType::f64: return std::ldexp(1.0, -53);
    case DType::f32: return std::ldexp(1.0, -24);
    case DType::f16: return std::ldexp(1.0, -11);
    case DType::bf16: return std::ldexp(1.0, -8);
  }
  return 1;
}

// The worst |got - want| / allowed seen per dtype (printed at the end).
double worst_seen[4] = {0, 0, 0, 0};

// The first element of `got` farther from `want` than allowed, or "".
std::string compare(const char* name, const std::vector<double>& got, const std::vector<double>& want, DType t) {
  if (got.size() != want.size()) return std::string(name) + ": sizes differ";
  double largest = 0;
  for (double w : want)
    if (!std::isnan(w)) largest = std::max(largest, std::fabs(w));
  for (std::size_t at = 0; at < want.size(); ++at) {
    if (std::isnan(want[at]) != std::isnan(got[at]))
      return std::string(name) + " element " + std::to_string(at) + ": " + std::to_string(got[at]) + ", reference " +
             std::to_string(want[at]);
    if (std::isnan(want[at])) continue;  // padding
    const double allowed = half_ulp(t) * std::fabs(want[at]) + 1e-9 * (1 + largest) +
                           (t == DType::f16 ? std::ldexp(1.0, -25) : 0.0);
    const double ratio = std::fabs(got[at] - want[at]) / allowed;
    worst_seen[static_cast<int>(t)] = std::max(worst_seen[static_cast<int>(t)], ratio);
    if (ratio > 1)
      return std::string(name) + " element " + std::to_string(at) + ": " + std::to_string(got[at]) + ", reference " +
             std::to_string(want[at]) + " (allowed " + std::to_string(allowed) + ")";
  }
  return "";
}

TEST(ExampleV2PluginHostGrad, DeclaresBackward) {
  auto example = load_example();
  ASSERT_TRUE(example);
  EXPECT_EQ(example->features(), kAllFeatures | kBackwardFeature);
}

TEST(ExampleV2PluginHostGrad, GradientsAgreeWithTheReferenceOnEveryFeature) {
  auto example = load_example();
  ASSERT_TRUE(example);
  auto reference = make_builtin("reference");
  ASSERT_TRUE(reference);
  const uint64_t seed = test_seed();
  std::printf("ATTNCHECK_SEED=%llu\n", static_cast<unsigned long long>(seed));
  int with_padding = 0, strided = 0;
  for (uint64_t n = 0; n < 150; ++n) {
    const Problem p = backward_problem(seed * 1000 + n);
    ASSERT_EQ(p.inconsistency(), "") << n;
    Problem p64 = p;  // the same values, every one exact in f64
    p64.dtype = DType::f64;
    const Outcome want = reference->run(p64);
    ASSERT_EQ(want.status, CallStatus::ok) << n << ": " << want.message;
    const Outcome got = example->run(p);
    ASSERT_EQ(got.status, CallStatus::ok) << "case " << n << " (" << dtype_name(p.dtype)
                                          << ", features " << feature_list(p.features()) << "): " << got.message;
    for (auto [name, g, w] : {std::tuple{"dq", &got.dq, &want.dq}, {"dk", &got.dk, &want.dk}, {"dv", &got.dv, &want.dv}})
      EXPECT_EQ(compare(name, *g, *w, p.dtype), "")
          << "case " << n << " (" << dtype_name(p.dtype) << ", features " << feature_list(p.features()) << ")";
    with_padding += !p.q_lens.empty() || !p.kv_lens.empty();
    strided += !p.layouts.all_dense();
  }
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
    std::printf("%s: worst |example - reference in f64| / allowed = %.3g\n", std::string(dtype_name(t)).c_str(),
                worst_seen[static_cast<int>(t)]);
  // The draws covered what the test is about.
  EXPECT_GT(with_padding, 10);
  EXPECT_GT(strided, 50);
}

}  // namespace
}  // namespace attncheck
