// The generators' own laws: every generated Problem is consistent and holds
// only values of its dtype, and every shrink candidate is consistent and
// strictly simpler, so shrinking ends.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <map>
#include <rapidcheck/gtest.h>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "driver/problem_gen.h"
#include "problem/fnv1a.h"
#include "gen/profiles.h"
#include "problem/transforms.h"

namespace attncheck {
namespace {

bool all_representable(const Problem& p) {
  for (const auto* t : {&p.q, &p.k, &p.v})
    for (double x : *t)
      if (!std::isnan(x) && round_to(p.dtype, x) != x) return false;
  return true;
}

GenOptions options_over_every_dtype() {
  GenOptions g;
  g.dtypes = every_dtype();
  return g;
}

RC_GTEST_PROP(Generators, ProblemsAreConsistent, ()) {
  const Problem p = *gen_problem(options_over_every_dtype());
  RC_ASSERT(p.inconsistency() == "");
  RC_ASSERT(all_representable(p));
}

// How complex a problem is, component by component: its extents, its
// features (mask, causal rule, explicit scale), the summed complexity of its
// values, and the keys its mask hides. A shrink candidate must be no larger
// in any component and smaller in at least one, so shrinking always ends.
struct Complexity {
  int64_t extents = 0, features = 0, values = 0, hidden = 0;
};

Complexity complexity(const Problem& p) {
  Complexity c;
  const Shape& s = p.shape;
  c.extents = s.batch + s.heads + s.q_len + s.kv_len + s.head_dim + s.value_dim;
  c.features = (p.has_mask() ? 1 : 0) + static_cast<int>(p.causal) + (std::isnan(p.scale) ? 0 : 1);
  for (const auto* t : {&p.q, &p.k, &p.v})
    for (double x : *t) c.values += value_complexity(x);
  for (uint8_t m : p.mask) c.hidden += m == 0;
  return c;
}

bool strictly_simpler(const Problem& a, const Problem& b) {
  const Complexity x = complexity(a), y = complexity(b);
  const bool no_larger = x.extents <= y.extents && x.features <= y.features && x.values <= y.values &&
                         x.hidden <= y.hidden;
  const bool smaller = x.extents < y.extents || x.features < y.features || x.values < y.values || x.hidden < y.hidden;
  return no_larger && smaller;
}

RC_GTEST_PROP(Generators, ShrinksAreConsistentAndStrictlySimpler, ()) {
  GenOptions g = options_over_every_dtype();
  g.max_q_len = g.max_kv_len = g.max_head_dim = g.max_value_dim = 9;
  const Problem p = *gen_problem(g);
  for (const Problem& c : shrink_problem(p)) {
    RC_ASSERT(c.inconsistency() == "");
    RC_ASSERT(all_representable(c));
    RC_ASSERT(strictly_simpler(c, p));
  }
}

// The check above can fail: a shrinker that offers its input unchanged, or
// one that grows the problem, is refused.
TEST(Generators, StrictSimplicityRefusesUnchangedAndLarger) {
  GenOptions g = options_over_every_dtype();
  const Problem p = sample_problem(g, 7, 50);
  EXPECT_FALSE(strictly_simpler(p, p));
  Problem larger = p;
  larger.scale = 0.5;
  if (std::isnan(p.scale)) {
    EXPECT_FALSE(strictly_simpler(larger, p));
  }
  const std::vector<Problem> candidates = shrink_problem(p, g);
  ASSERT_FALSE(candidates.empty());
  EXPECT_FALSE(strictly_simpler(p, candidates.front()));  // the inverse step is not a shrink
}

TEST(Generators, LengthsReachPastTileSizes) {
  GenOptions g;
  int64_t longest = 0;
  bool lengths_differ = false, many_heads = false;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const Problem p = sample_problem(g, seed);
    longest = std::max({longest, p.shape.q_len, p.shape.kv_len});
    lengths_differ |= p.shape.q_len != p.shape.kv_len;
    many_heads |= p.shape.batch > 1 && p.shape.heads > 1;
  }
  EXPECT_GE(longest, 65);
  EXPECT_TRUE(lengths_differ);
  EXPECT_TRUE(many_heads);
}

// ---- ABI v2 fields ---------------------------------------------------------

bool v2_values_representable(const Problem& p) {
  for (double x : p.bias)
    if (!std::isnan(x) && x != -INFINITY && round_to(p.dtype, x) != x) return false;
  for (const auto* t : {&p.alibi_slopes, &p.sinks})
    for (double x : *t)
      if (round_to(DType::f32, x) != x) return false;
  return true;
}

GenOptions every_feature() {
  GenOptions g = options_over_every_dtype();
  g.features = kAllFeatures;
  return g;
}

// The default options draw exactly the same problems, shrink candidates and
// case hashes from the same seeds, release after release: a change to the
// generators that moves the v1 draws shows here. The constants were computed
// over 300 seeds of each option set when the engine became xoshiro256** with
// ziggurat normals (fast_rng.h; the seeds' old mt19937_64 draws are gone);
// they held before that from the commit before GenOptions::features existed.
// The shrinks column moved once, on purpose, in issue #34 (values shrink by
// blocks of zeros and integers, and to 1 of their sign and the nearest integer);
// the draws and case hashes did not. The draws over every dtype (set 1 here,
// both sets below) moved once, on purpose, when rounding to f16 and bf16
// became correct (a double rounds once, not through float: the rare value a
// float put on a tie now rounds to the nearer neighbour; dtype_codec.h).
// The profiles' draws (set 2 here, the `small` profile's set 3, and set 0
// below) moved on purpose in issue #33 items 2 and 3: the default profile's
// long rows (long_decode, long_prefill), every profile's bug-report shapes
// and inputs (report_shape_chance, kReportFamilies) and its work cap
// (max_case_work); GenOptions{}'s draws (sets 0 and 1 here, set 1 below) did
// not move.
TEST(Generators, V1DrawsAreUnchanged) {
  GenOptions every = options_over_every_dtype();
  const GenOptions sets[] = {GenOptions{}, every, find_profile("default")->options(), find_profile("small")->options()};
  const uint64_t expected[4][3] = {{0x8dc7905db6f8fb7dull, 0xc4cb99646d644c06ull, 0x23787490460beda8ull},
                                   {0x3134e71c74359d8eull, 0xb89b62718158d405ull, 0x624a39c2cc8d037aull},
                                   {0xa62edfb4e4de67acull, 0xf4290007b2700b25ull, 0xbc3c7f19b697e629ull},
                                   {0x279643c2e5bed1d6ull, 0x203dd12c1c49be74ull, 0x3783dabcd8aee901ull}};
  for (int set = 0; set < 4; ++set) {
    const GenOptions& g = sets[set];
    Fnv1a draws(Fnv1a::kSeedBasis), shrinks(Fnv1a::kSeedBasis), cases(Fnv1a::kSeedBasis);
    for (uint64_t seed = 0; seed < 300; ++seed) {
      const Problem p = sample_problem(g, seed, static_cast<int>(seed % 101));
      ASSERT_EQ(p.features() & ~kV1Features, 0u) << feature_list(p.features());
      ASSERT_TRUE(p.mask_broadcast.full());
      draws.u64(problem_fingerprint(p));
      CaseRecord rec;
      rec.problem = p;
      rec.law = "matches_oracle";
      cases.u64(case_content_hash(rec));
      if (seed < 40 && p.q.size() + p.k.size() + p.v.size() < 400)
        for (const Problem& c : shrink_problem(p, g)) shrinks.u64(problem_fingerprint(c));
    }
    EXPECT_EQ(draws.value, expected[set][0]) << "option set " << set << ": the v1 draws changed" << std::hex << " 0x" << draws.value;
    EXPECT_EQ(shrinks.value, expected[set][1]) << "option set " << set << ": the v1 shrinks changed" << std::hex << " 0x" << shrinks.value;
    EXPECT_EQ(cases.value, expected[set][2]) << "option set " << set << ": the v1 case hashes changed" << std::hex << " 0x" << cases.value;
  }
}

// The same for the draws beyond v1: every ABI v2 feature and the backward bit
// allowed (and, in the second set, required), every dtype, every value family
// of the `default` profile's shapes. Pinned when the generators began reading
// their choices from a source (gen/choice_source.h): the random source
// must draw what the random engine drew before, choice for choice.
TEST(Generators, V2AndBackwardDrawsAreUnchanged) {
  GenOptions every = find_profile("default")->options();
  every.dtypes = every_dtype();
  every.features = kEveryFeature;
  every.families = kAllFamilies;
  GenOptions required = options_over_every_dtype();
  required.features = kEveryFeature;
  required.required = kEveryFeature & ~kV1Features;
  const GenOptions sets[] = {every, required};
  const uint64_t expected[2][2] = {{0x4ca19c7a93d803caull, 0xad284a3465688a98ull},
                                   {0x29768cdcc30714a6ull, 0x08e033aa370a3318ull}};
  for (int set = 0; set < 2; ++set) {
    Fnv1a draws(Fnv1a::kSeedBasis), shrinks(Fnv1a::kSeedBasis);
    for (uint64_t seed = 0; seed < 200; ++seed) {
      const Problem p = sample_problem(sets[set], seed, static_cast<int>(seed % 101));
      draws.u64(problem_fingerprint(p));
      if (seed < 30 && p.q.size() + p.k.size() + p.v.size() < 400)
        for (const Problem& c : shrink_problem(p, sets[set])) shrinks.u64(problem_fingerprint(c));
    }
    EXPECT_EQ(draws.value, expected[set][0]) << "option set " << set << ": the draws changed" << std::hex << " 0x" << draws.value;
    EXPECT_EQ(shrinks.value, expected[set][1]) << "option set " << set << ": the shrinks changed" << std::hex << " 0x" << shrinks.value;
  }
}

RC_GTEST_PROP(Generators, ProblemsWithEveryFeatureAreConsistent, ()) {
  const Problem p = *gen_problem(every_feature());
  RC_ASSERT(p.inconsistency() == "");
  RC_ASSERT(all_representable(p));
  RC_ASSERT(v2_values_representable(p));
}

// Drawn with one feature allowed, a problem uses no other (beyond v1's).
TEST(Generators, DrawsStayWithinTheirFeatures) {
  for (FeatureBits bit = ATTNCHECK_FEATURE_GQA; bit <= ATTNCHECK_FEATURE_LSE; bit <<= 1) {
    GenOptions g = options_over_every_dtype();
    g.features = kV1Features | bit;
    bool seen = false;
    for (uint64_t seed = 0; seed < 200; ++seed) {
      const Problem p = sample_problem(g, seed, static_cast<int>(seed % 101));
      ASSERT_EQ(p.inconsistency(), "") << feature_name(bit) << " seed " << seed;
      ASSERT_EQ(p.features() & ~g.features, 0u) << feature_name(bit) << ": " << feature_list(p.features());
      seen |= (p.features() & bit) != 0;
    }
    EXPECT_TRUE(seen) << feature_name(bit) << " never drawn in 200 cases";
  }
  GenOptions none = options_over_every_dtype();
  none.features = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) EXPECT_EQ(sample_problem(none, seed).features(), 0u);
}

// Every feature occurs, in combinations, with the values that provoke faults.
TEST(Generators, EveryFeatureAndTheirCombinationsOccur) {
  GenOptions g = every_feature();
  g.max_heads = 8;  // groups of 2 and 4 (with 3 heads, only multi-query)
  std::map<FeatureBits, int> alone_with_others;  // feature -> cases using it with 2+ other v2 features
  bool empty_len = false, full_len = false, nan_padding = false, neg_inf_bias = false, broadcast_bias = false,
       broadcast_mask = false, bshd = false, gaps = false, binding_cap = false, alibi_family = false,
       zero_window = false, one_side = false, mqa = false, gqa = false, big_sink = false;
  for (uint64_t seed = 0; seed < 1500; ++seed) {
    const Problem p = sample_problem(g, seed, static_cast<int>(seed % 101));
    const FeatureBits v2 = p.features() & ~kV1Features;
    for (FeatureBits b = ATTNCHECK_FEATURE_GQA; b <= ATTNCHECK_FEATURE_LSE; b <<= 1)
      if ((v2 & b) && std::popcount(v2) >= 3) ++alone_with_others[b];
    const Shape& s = p.shape;
    for (int32_t n : p.q_lens) { empty_len |= n == 0; full_len |= n == s.q_len; }
    for (int32_t n : p.kv_lens) { empty_len |= n == 0; full_len |= n == s.kv_len; }
    if (!p.kv_lens.empty())
      for (int64_t j = p.kv_lens[0]; j < s.kv_len; ++j) nan_padding |= std::isnan(p.k[p.k_at(0, j, 0)]);
    for (double x : p.bias) neg_inf_bias |= x == -INFINITY;
    broadcast_bias |= p.has_bias() && !p.bias_broadcast.full();
    broadcast_mask |= p.has_mask() && !p.mask_broadcast.full();
    for (const TensorLayout* l : {&p.layouts.q, &p.layouts.k, &p.layouts.v, &p.layouts.out}) {
      bshd |= l->order == std::array<uint8_t, 3>{0, 2, 1};
      gaps |= l->gap[0] + l->gap[1] + l->gap[2] > 0;
    }
    binding_cap |= p.softcap > 0 && p.softcap <= 1;
    alibi_family |= s.heads >= 2 && !p.alibi_slopes.empty() && p.alibi_slopes[0] == std::exp2(-8.0 / s.heads);
    zero_window |= p.window_left == 0 || p.window_right == 0;
    one_side |= (p.window_left >= 0) != (p.window_right >= 0);
    mqa |= s.heads > 1 && s.kv_head_count() == 1;
    gqa |= s.kv_head_count() > 1 && s.kv_head_count() < s.heads;
    for (double x : p.sinks) big_sink |= std::abs(x) >= 1024;
  }
  for (FeatureBits b = ATTNCHECK_FEATURE_GQA; b <= ATTNCHECK_FEATURE_LSE; b <<= 1)
    EXPECT_GE(alone_with_others[b], 20) << feature_name(b) << " seldom combined with two others";
  EXPECT_TRUE(empty_len && full_len && nan_padding);
  EXPECT_TRUE(neg_inf_bias && broadcast_bias && broadcast_mask);
  EXPECT_TRUE(bshd && gaps);
  EXPECT_TRUE(binding_cap && alibi_family && zero_window && one_side);
  EXPECT_TRUE(mqa && gqa && big_sink);
}

// How complex a v2 problem is, compared lexicographically: extents, then the
// features it uses (a causal rule counts 1 or 2, an explicit scale 1), then
// its structure (layout gaps and orders, lengths given and the rows and keys they leave out, bounded
// window sides and their widths, axes a mask or bias varies along), then the
// summed complexity of its values, then the keys its mask hides.
std::array<int64_t, 5> v2_complexity(const Problem& p) {
  const Shape& s = p.shape;
  std::array<int64_t, 5> c{};
  c[0] = s.batch + s.heads + s.q_len + s.kv_len + s.head_dim + s.value_dim;
  c[1] = std::popcount(p.features() & ~ATTNCHECK_FEATURE_CAUSAL) + static_cast<int>(p.causal) +
         (std::isnan(p.scale) ? 0 : 1);
  for (const TensorLayout* l : {&p.layouts.q, &p.layouts.k, &p.layouts.v, &p.layouts.out})
    c[2] += l->gap[0] + l->gap[1] + l->gap[2] + (l->order != std::array<uint8_t, 3>{0, 1, 2});
  c[2] += !p.q_lens.empty() + !p.kv_lens.empty();
  for (std::size_t b = 0; b < p.q_lens.size(); ++b) c[2] += s.q_len - p.q_lens[b];
  for (std::size_t b = 0; b < p.kv_lens.size(); ++b) c[2] += s.kv_len - p.kv_lens[b];
  for (int64_t w : {p.window_left, p.window_right}) c[2] += w >= 0 ? w + 1 : 0;
  for (const Broadcast* b : {&p.mask_broadcast, &p.bias_broadcast})
    c[2] += b->per_batch + b->per_head + b->per_row;
  for (const auto* t : {&p.q, &p.k, &p.v, &p.bias, &p.alibi_slopes, &p.sinks})
    for (double x : *t) c[3] += value_complexity(x);
  c[3] += value_complexity(p.softcap);
  for (uint8_t m : p.mask) c[4] += m == 0;
  return c;
}

RC_GTEST_PROP(Generators, V2ShrinksAreConsistentStrictlySimplerAndWithinTheFeatures, ()) {
  GenOptions g = every_feature();
  g.max_q_len = g.max_kv_len = g.max_head_dim = g.max_value_dim = 9;
  const Problem p = *gen_problem(g);
  for (const Problem& c : shrink_problem(p, g)) {
    RC_ASSERT(c.inconsistency() == "");
    RC_ASSERT(all_representable(c));
    RC_ASSERT(v2_values_representable(c));
    RC_ASSERT((c.features() & ~p.features()) == 0u);
    RC_ASSERT(v2_complexity(c) < v2_complexity(p));
  }
}

// Shrinking a v2 problem all the way (always taking the first candidate that
// still uses GQA) ends, and at a small problem.
TEST(Generators, V2ShrinkingEnds) {
  GenOptions g = every_feature();
  g.max_q_len = g.max_kv_len = g.max_head_dim = g.max_value_dim = 9;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Problem p = sample_problem(g, seed);
    int steps = 0;
    for (bool moved = true; moved && steps < 100000; ++steps) {
      moved = false;
      for (Problem& c : shrink_problem(p, g))
        if (c.features() == p.features()) { p = std::move(c); moved = true; break; }
    }
    EXPECT_LT(steps, 100000) << "seed " << seed;
    EXPECT_LE(p.shape.q_len + p.shape.kv_len + p.shape.head_dim + p.shape.value_dim, 4 + 2 * 9) << "seed " << seed;
  }
}

TEST(Generators, ValueComplexityOrdersSimpleFirst) {
  EXPECT_LT(value_complexity(0.0), value_complexity(-0.0));
  EXPECT_LT(value_complexity(1.0), value_complexity(1.5));
  EXPECT_LT(value_complexity(1.0), value_complexity(-1.0));
  EXPECT_LT(value_complexity(2.0), value_complexity(1024.0));
  EXPECT_LT(value_complexity(1e30), value_complexity(std::nan("")));
}

}  // namespace
}  // namespace attncheck
