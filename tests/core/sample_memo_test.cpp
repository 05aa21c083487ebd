// The sample memo (src/gen/sample_memo.h): a draw with the same options,
// seed and size is the problem sample_problem draws, kept; any other options,
// seed or size draws anew; every field of the options is in the key.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gen/gen_options_fields.h"
#include "gen/generators.h"
#include "gen/sample_memo.h"
#include "problem/transforms.h"

namespace attncheck {
namespace {

GenOptions small_options() {
  GenOptions g;
  g.dtypes = {DType::f32, DType::f16};
  g.max_q_len = g.max_kv_len = 12;
  g.max_head_dim = g.max_value_dim = 8;
  g.features = kAllFeatures;
  g.families = kAllFamilies;
  return g;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

void expect_same(const Problem& a, const Problem& b) {
  EXPECT_EQ(problem_fingerprint(a), problem_fingerprint(b));
  EXPECT_TRUE(same_bits(a.q, b.q) && same_bits(a.k, b.k) && same_bits(a.v, b.v) && same_bits(a.dout, b.dout));
  EXPECT_EQ(a.describe(1 << 20), b.describe(1 << 20));
}

TEST(SampleMemo, AHitIsTheProblemSampleProblemDraws) {
  const GenOptions g = small_options();
  const std::string key = gen_options_key(g);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const SampleMemoCounts before = sample_memo_counts();
    const auto first = sample_problem_shared(g, key, seed, 70);
    const auto again = sample_problem_shared(g, key, seed, 70);
    const SampleMemoCounts after = sample_memo_counts();
    EXPECT_EQ(after.misses - before.misses, 1u);
    EXPECT_EQ(after.hits - before.hits, 1u);
    EXPECT_EQ(first.get(), again.get());  // the kept one, shared
    expect_same(*first, sample_problem(g, seed, 70));
  }
}

TEST(SampleMemo, OtherSeedSizeOrOptionsDrawAnew) {
  const GenOptions g = small_options();
  const std::string key = gen_options_key(g);
  // Seeds the other tests do not draw.
  const auto base = sample_problem_shared(g, key, 1007, 70);
  const SampleMemoCounts before = sample_memo_counts();
  const auto other_seed = sample_problem_shared(g, key, 1008, 70);
  const auto other_size = sample_problem_shared(g, key, 1007, 69);
  GenOptions h = g;
  h.features &= ~ATTNCHECK_FEATURE_MASK;
  const auto other_options = sample_problem_shared(h, gen_options_key(h), 1007, 70);
  EXPECT_EQ(sample_memo_counts().misses - before.misses, 3u);
  EXPECT_EQ(sample_memo_counts().hits, before.hits);
  expect_same(*other_seed, sample_problem(g, 1008, 70));
  expect_same(*other_size, sample_problem(g, 1007, 69));
  expect_same(*other_options, sample_problem(h, 1007, 70));
}

// Each field of GenOptions and of a ShapeDomain changes the key.
TEST(SampleMemo, EveryOptionIsInTheKey) {
  GenOptions g = small_options();
  g.domains = {ShapeDomain{}};
  const std::string base = gen_options_key(g);
  const std::vector<std::function<void(GenOptions&)>> changes = {
      [](GenOptions& o) { o.dtypes = {DType::f32}; },
      [](GenOptions& o) { o.min_batch = 2; },
      [](GenOptions& o) { o.max_batch = 4; },
      [](GenOptions& o) { o.min_heads = 2; },
      [](GenOptions& o) { o.max_heads = 4; },
      [](GenOptions& o) { o.min_q_len = 2; },
      [](GenOptions& o) { o.max_q_len = 13; },
      [](GenOptions& o) { o.min_kv_len = 2; },
      [](GenOptions& o) { o.max_kv_len = 13; },
      [](GenOptions& o) { o.min_head_dim = 2; },
      [](GenOptions& o) { o.max_head_dim = 9; },
      [](GenOptions& o) { o.max_value_dim = 9; },
      [](GenOptions& o) { o.same_dims = true; },
      [](GenOptions& o) { o.causal = false; },
      [](GenOptions& o) { o.mask = false; },
      [](GenOptions& o) { o.features = kV1Features; },
      [](GenOptions& o) { o.required = ATTNCHECK_FEATURE_MASK; },
      [](GenOptions& o) { o.explicit_scale = false; },
      [](GenOptions& o) { o.families = kGaussian; },
      [](GenOptions& o) { o.size_factor = 2; },
      [](GenOptions& o) { o.head_dims = {64}; },
      [](GenOptions& o) { o.kernel_head_dim_chance = 0.5; },
      [](GenOptions& o) { o.q_len_multiple = 2; },
      [](GenOptions& o) { o.kv_len_multiple = 2; },
      [](GenOptions& o) { o.domains.push_back(ShapeDomain{}); },
      [](GenOptions& o) { o.domains[0].name = "decode"; },
      [](GenOptions& o) { o.domains[0].weight = 2; },
      [](GenOptions& o) { o.domains[0].max_batch = 4; },
      [](GenOptions& o) { o.domains[0].max_heads = 4; },
      [](GenOptions& o) { o.domains[0].min_q_len = 2; },
      [](GenOptions& o) { o.domains[0].max_q_len = 73; },
      [](GenOptions& o) { o.domains[0].min_kv_len = 2; },
      [](GenOptions& o) { o.domains[0].max_kv_len = 73; },
      [](GenOptions& o) { o.domains[0].q_equals_kv = true; },
      [](GenOptions& o) { o.domains[0].q_below_kv = true; },
      [](GenOptions& o) { o.domains[0].ramped = false; },
      [](GenOptions& o) { o.domains[0].masks = false; },
  };
  for (std::size_t i = 0; i < changes.size(); ++i) {
    GenOptions h = g;
    changes[i](h);
    EXPECT_NE(gen_options_key(h), base) << "change " << i;
  }
  EXPECT_EQ(gen_options_key(GenOptions(g)), base);
}

// Another value of any option's type.
template <class T>
T changed(const T& x) {
  if constexpr (std::is_same_v<T, bool>) return !x;
  else if constexpr (std::is_same_v<T, const char*>) return x && std::string_view(x) == "other" ? "another" : "other";
  else if constexpr (std::is_arithmetic_v<T>) return static_cast<T>(x + 1);
  else {
    T more = x;
    more.push_back(typename T::value_type{});
    return more;
  }
}

// Walking the field lists themselves (gen_options_fields.h): every field a
// list names, changed alone, at the top level and in a domain, changes the key.
TEST(SampleMemo, EveryListedFieldIsInTheKey) {
  GenOptions g = small_options();
  g.domains = {ShapeDomain{}};
  const std::string base = gen_options_key(g);
  int fields = 0;
  for_each_field<GenOptions>(
      [&](const auto& f, const auto& value) {
        GenOptions h = g;
        h.*std::remove_cvref_t<decltype(f)>::member = changed(value);
        EXPECT_NE(gen_options_key(h), base) << f.name;
        ++fields;
      },
      g);
  for_each_field<ShapeDomain>(
      [&](const auto& f, const auto& value) {
        GenOptions h = g;
        h.domains[0].*std::remove_cvref_t<decltype(f)>::member = changed(value);
        EXPECT_NE(gen_options_key(h), base) << "domains[0]." << f.name;
        ++fields;
      },
      g.domains[0]);
  EXPECT_EQ(fields, 31 + 18);  // GenOptions::numerics (ABI v3 declared numerics) the 31st
}

}  // namespace
}  // namespace attncheck
