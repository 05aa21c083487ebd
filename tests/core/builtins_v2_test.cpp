// The references through ABI v2: reference, naive and online on calls built
// by hand (hand_built_v2_call.h), each feature alone and all together, in every
// dtype, against the spec's formulas computed in double and against each
// other; padding rows, gaps and lse padding never written; padding and gaps
// full of NaN never read into a result. Seed: ATTNCHECK_SEED (printed).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "driver/seed_env.h"
#include "impls/builtins.h"
#include "parallel/parallel_for.h"
#include "problem/problem.h"
#include "hand_built_v2_call.h"

namespace attncheck {
namespace {

using namespace testing_v2;

uint64_t test_seed() {
  static const uint64_t seed = [] {
    const uint64_t s = seed_from_env_or(20261130);
    std::printf("builtins_v2_test: ATTNCHECK_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

const char* const kReferences[] = {"reference", "naive", "online"};

// |got - want| allowed: the float kernels' own error (a few ulp of float per
// operation over <= 75 keys) plus the storage rounding of 16-bit outputs; lse
// is a float for every dtype.
struct Tolerance {
  double abs, rel;
  double of(double want) const { return abs + rel * std::abs(want); }
};
Tolerance out_tolerance(DType t) {
  switch (t) {
    case DType::f64: return {1e-12, 0};
    case DType::f32: return {2e-5, 0};
    case DType::f16: return {2e-5, 0x1p-11};
    case DType::bf16: return {2e-5, 0x1p-8};
  }
  return {0, 0};
}
Tolerance lse_tolerance(DType t) { return t == DType::f64 ? Tolerance{1e-12, 0x1p-23} : Tolerance{2e-5, 1e-6}; }

bool close(double got, double want, const Tolerance& tol, double factor = 1) {
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::abs(got - want) <= factor * tol.of(want);  // false for NaN
}

// What one implementation returned at the live elements.
struct Result {
  std::vector<double> out, lse;  // as Expected: [b][h][i][c] and [b][h][i], live rows only
};

// Runs `name` on t (fresh sentinels), checks the return code and the bytes
// outside the live elements, and collects its live outputs.
Result run(const char* name, TestCall& t) {
  Result r;
  const BuiltinInfo* builtin = find_builtin(name);
  EXPECT_TRUE(builtin && builtin->forward_v2) << name;
  if (!builtin || !builtin->forward_v2) return r;
  EXPECT_EQ(builtin->features & kAllFeatures, kAllFeatures) << name;  // and PACKED (packed_call_test.cpp)
  t.reset_outputs();
  char err[256] = "";
  const int rc = builtin->forward_v2(&t.enc.call, err, sizeof err);
  EXPECT_EQ(rc, ATTNCHECK_OK) << name << ": " << err;
  EXPECT_EQ(untouched_outside_live(t), "") << name;
  const CallSpec& s = t.spec;
  r.out.assign(static_cast<std::size_t>(s.batch * s.heads * s.q_len * s.value_dim), 0.0);
  r.lse.assign(static_cast<std::size_t>(s.batch * s.heads * s.q_len), 0.0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < t.lq(b); ++i) {
        const std::size_t row = static_cast<std::size_t>((b * s.heads + h) * s.q_len + i);
        for (int64_t c = 0; c < s.value_dim; ++c) r.out[row * s.value_dim + c] = t.out_value(b, h, i, c);
        if (s.lse) r.lse[row] = t.enc.lse[row];
      }
  return r;
}

// Compares two sets of live outputs; "" when every element is within
// `factor` times the tolerance, else the first few that are not.
std::string mismatches(const TestCall& t, const Result& got, const std::vector<double>& want_out,
                       const std::vector<double>& want_lse, double factor) {
  const CallSpec& s = t.spec;
  const Tolerance out_tol = out_tolerance(s.dtype), lse_tol = lse_tolerance(s.dtype);
  std::string report;
  int shown = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < t.lq(b); ++i) {
        const std::size_t row = static_cast<std::size_t>((b * s.heads + h) * s.q_len + i);
        const auto where = "(b " + std::to_string(b) + ", h " + std::to_string(h) + ", i " + std::to_string(i);
        for (int64_t c = 0; c < s.value_dim; ++c) {
          const std::size_t at = row * s.value_dim + c;
          if (!close(got.out[at], want_out[at], out_tol, factor) && shown++ < 4)
            report += " out" + where + ", c " + std::to_string(c) + ") = " + std::to_string(got.out[at]) +
                      " want " + std::to_string(want_out[at]) + ";";
        }
        if (s.lse && !close(got.lse[row], want_lse[row], lse_tol, factor) && shown++ < 4)
          report += " lse" + where + ") = " + std::to_string(got.lse[row]) + " want " + std::to_string(want_lse[row]) + ";";
      }
  return report;
}

// Every reference on the call of `spec`: each matches the spec's double
// computation and the other two.
void check_references(const CallSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  TestCall t = make_test_call(spec, rng);
  const Expected want = expected_v2(t);
  std::vector<std::pair<const char*, Result>> results;
  for (const char* name : kReferences) {
    Result r = run(name, t);
    if (r.out.empty()) return;
    EXPECT_EQ(mismatches(t, r, want.out, want.lse, 1), "") << name << " against the spec in double";
    results.emplace_back(name, std::move(r));
  }
  for (std::size_t a = 0; a < results.size(); ++a)
    for (std::size_t b = a + 1; b < results.size(); ++b)
      EXPECT_EQ(mismatches(t, results[a].second, results[b].second.out, results[b].second.lse, 2), "")
          << results[a].first << " against " << results[b].first;
}

CallSpec with(void (*edit)(CallSpec&)) {
  CallSpec s;
  edit(s);
  return s;
}

// Layouts with gaps: BSHD (FlashAttention's) and BHSD, different per view.
void strided(CallSpec& s) {
  s.q = {true, 3, 2, 5};
  s.k = {false, 1, 4, 2};
  s.v = {true, 0, 1, 0};
  s.out = {true, 2, 3, 1};
}

// One feature per case (on B2 H4 Q37 K75 D8 V5, which cuts the last query
// block and key tile short), then combinations.
std::vector<std::pair<std::string, CallSpec>> feature_cases() {
  return {
      {"dense", CallSpec{}},
      {"strided", with(strided)},
      {"gqa", with([](CallSpec& s) { s.heads = 6, s.kv_heads = 2; })},
      {"mqa_group_of_12", with([](CallSpec& s) { s.batch = 1, s.heads = 12, s.kv_heads = 1; })},
      {"lengths", with([](CallSpec& s) { s.batch = 4, s.q_lens = {20, 0, 37, 5}, s.kv_lens = {75, 40, 0, 33}; })},
      {"q_lens_only", with([](CallSpec& s) { s.q_lens = {1, 30}; })},
      {"kv_lens_only", with([](CallSpec& s) { s.kv_lens = {70, 2}; })},
      {"causal_top_left", with([](CallSpec& s) { s.causal = ATTNCHECK_CAUSAL_TOP_LEFT; })},
      {"causal_bottom_right", with([](CallSpec& s) { s.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT; })},
      {"causal_bottom_right_more_queries",
       with([](CallSpec& s) { s.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT, s.q_len = 75, s.kv_len = 37; })},
      {"lengths_causal_bottom_right", with([](CallSpec& s) {
         s.batch = 3, s.q_lens = {20, 37, 9}, s.kv_lens = {75, 11, 40}, s.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT;
       })},
      {"window_left", with([](CallSpec& s) { s.window_left = 9; })},
      {"window_right", with([](CallSpec& s) { s.window_right = 4; })},
      {"window_diagonal_only", with([](CallSpec& s) { s.window_left = 0, s.window_right = 0; })},
      {"window_both_top_left",
       with([](CallSpec& s) { s.window_left = 5, s.window_right = 3, s.causal = ATTNCHECK_CAUSAL_TOP_LEFT; })},
      {"window_causal_bottom_right", with([](CallSpec& s) { s.window_left = 20, s.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT; })},
      {"window_wider_than_keys", with([](CallSpec& s) { s.window_left = 1000000, s.window_right = 1LL << 62; })},
      {"softcap", with([](CallSpec& s) { s.softcap = 1.5, s.scale = 1.0; })},
      {"scale_explicit", with([](CallSpec& s) { s.scale = 0.3; })},
      {"bias", with([](CallSpec& s) { s.bias = true; })},
      {"bias_broadcast_batch", with([](CallSpec& s) { s.bias = true, s.bias_varies = {false, true, true}; })},
      {"bias_broadcast_head", with([](CallSpec& s) { s.bias = true, s.bias_varies = {true, false, true}; })},
      {"bias_broadcast_row", with([](CallSpec& s) { s.bias = true, s.bias_varies = {true, true, false}; })},
      {"bias_one_row_for_all", with([](CallSpec& s) { s.bias = true, s.bias_varies = {false, false, false}; })},
      {"mask", with([](CallSpec& s) { s.mask = true; })},
      {"mask_broadcast_head", with([](CallSpec& s) { s.mask = true, s.mask_varies = {true, false, true}; })},
      {"alibi", with([](CallSpec& s) { s.alibi_slopes = {0.5f, 0.25f, 0.125f, 0.0625f}; })},
      {"sinks", with([](CallSpec& s) { s.sinks = {2.5f, -2.0f, 0.5f, -8.0f}; })},
      {"lse", with([](CallSpec& s) { s.lse = true; })},
      {"lse_sinks_blind_rows", with([](CallSpec& s) {
         s.lse = true, s.sinks = {1.0f, -3.0f, 0.25f, 4.0f}, s.mask = true, s.window_right = 2;
       })},
      {"lse_blind_rows_no_sinks", with([](CallSpec& s) {
         s.lse = true, s.batch = 3, s.mask = true, s.q_lens = {37, 4, 10}, s.kv_lens = {75, 0, 30};
       })},
      {"all_bottom_right", with([](CallSpec& s) {
         strided(s);
         s.batch = 3, s.heads = 6, s.kv_heads = 2;
         s.q_lens = {20, 3, 37}, s.kv_lens = {70, 0, 75};
         s.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT, s.window_left = 12;
         s.softcap = 2.0, s.scale = 0.9;
         s.bias = true, s.bias_varies = {true, false, true};
         s.mask = true, s.mask_varies = {false, true, true};
         s.alibi_slopes = {0.5f, 0.25f, 0.125f, 0.0625f, 0.03125f, 0.015625f};
         s.sinks = {2.5f, -2.0f, 0.5f, -8.0f, 0.0f, 1.0f};
         s.lse = true;
       })},
      {"all_top_left_two_sided_window", with([](CallSpec& s) {
         strided(s);
         s.batch = 2, s.heads = 4, s.kv_heads = 1, s.head_dim = 3, s.value_dim = 7;
         s.q_lens = {33, 37}, s.kv_lens = {75, 50};
         s.causal = ATTNCHECK_CAUSAL_TOP_LEFT, s.window_left = 40, s.window_right = 3;
         s.softcap = 0.75;
         s.bias = true, s.mask = true;
         s.alibi_slopes = {0.25f, 0.5f, 1.0f, 2.0f};
         s.sinks = {-1.0f, 3.0f, 0.5f, 0.0f};
         s.lse = true;
       })},
      {"all_no_causal", with([](CallSpec& s) {
         strided(s);
         s.heads = 8, s.kv_heads = 4;
         s.q_lens = {37, 12}, s.kv_lens = {31, 75};
         s.window_left = 7, s.window_right = 5;
         s.softcap = 1.0, s.bias = true, s.bias_varies = {false, false, true};
         s.alibi_slopes = {0.5f, 0.5f, 0.25f, 0.25f, 0.125f, 0.125f, 0.0625f, 0.0625f};
         s.sinks = {0.5f, 0.5f, 0.5f, 0.5f, -0.5f, -0.5f, -0.5f, -0.5f};
         s.lse = true;
       })},
  };
}

TEST(BuiltinsV2, EveryFeatureAloneAndTogetherInEveryDtype) {
  for (const auto& [name, base] : feature_cases())
    for (DType dtype : every_dtype()) {
      SCOPED_TRACE(name + " " + std::string(dtype_name(dtype)));
      CallSpec spec = base;
      spec.dtype = dtype;
      check_references(spec, test_seed());
    }
}

TEST(BuiltinsV2, ManySeedsOfTheFullCombination) {
  const auto cases = feature_cases();
  for (const auto& [name, base] : cases) {
    if (name.rfind("all_", 0) != 0) continue;
    for (uint64_t k = 1; k <= 5; ++k)
      for (DType dtype : {DType::f32, DType::f64}) {
        SCOPED_TRACE(name + " " + std::string(dtype_name(dtype)) + " seed +" + std::to_string(k));
        CallSpec spec = base;
        spec.dtype = dtype;
        check_references(spec, test_seed() + k);
      }
  }
}

// The spec computation itself must see each feature: a kernel that ignored
// one would otherwise match an expectation that ignores it too.
TEST(BuiltinsV2, EachFeatureChangesTheExpectation) {
  const CallSpec plain;
  std::mt19937_64 rng(test_seed());
  const TestCall base_call = make_test_call(plain, rng);
  const Expected base = expected_v2(base_call);
  for (const auto& [name, spec] : feature_cases()) {
    if (name == "dense" || name == "strided" || name == "window_wider_than_keys" || spec.batch != plain.batch ||
        spec.heads != plain.heads || spec.q_len != plain.q_len || spec.kv_len != plain.kv_len ||
        spec.head_dim != plain.head_dim || spec.value_dim != plain.value_dim)
      continue;
    std::mt19937_64 same(test_seed());
    const TestCall t = make_test_call(spec, same);
    const Expected e = expected_v2(t);
    double diff = 0;
    for (std::size_t k = 0; k < e.out.size(); ++k) diff = std::max(diff, std::abs(e.out[k] - base.out[k]));
    if (spec.lse && !spec.sinks.empty())
      for (std::size_t k = 0; k < e.lse.size(); ++k)
        if (std::isfinite(e.lse[k]) && std::isfinite(base.lse[k])) diff = std::max(diff, std::abs(e.lse[k] - base.lse[k]));
    if (name == "lse") continue;  // lse changes no output; its own expectation is checked above
    EXPECT_GT(diff, 1e-3) << name;
  }
}

// A key tile wholly outside every row's window is never loaded by online
// (nor read by naive, which visits visible keys only): NaN in those live keys
// changes nothing. 16 rows (one block) against 128 keys, bottom-right causal
// with a window of 8 keys: rows see keys 105..127, tiles 0..95 never.
TEST(BuiltinsV2, KeysOutsideTheWindowAreNeverLoaded) {
  for (DType dtype : every_dtype()) {
    SCOPED_TRACE(dtype_name(dtype));
    CallSpec s;
    s.dtype = dtype;
    s.batch = 1, s.heads = 2, s.kv_heads = 1, s.q_len = 16, s.kv_len = 128;
    s.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT, s.window_left = 7;
    std::mt19937_64 rng(test_seed());
    TestCall t = make_test_call(s, rng);
    const Expected want = expected_v2(t);
    const DTypeInfo& di = info(dtype);
    for (int64_t j = 0; j < 96; ++j) {
      for (int64_t d = 0; d < s.head_dim; ++d) di.encode(kNaN, t.enc.k.at(0, 0, j, d));
      for (int64_t c = 0; c < s.value_dim; ++c) di.encode(kNaN, t.enc.v.at(0, 0, j, c));
    }
    for (const char* name : {"online", "naive"}) {
      const Result r = run(name, t);
      EXPECT_EQ(mismatches(t, r, want.out, want.lse, 1), "") << name;
    }
  }
}

// online at a shape parallel_for splits across threads (B2 H8 KV2 Q200
// K333 D48 V40, ~90 MFLOP, query blocks and key tiles cut short), with GQA,
// strides, lengths, a window, bias, ALiBi, sinks and lse: matches the spec and
// gives bit for bit what the same call computes on one thread.
TEST(BuiltinsV2, OnlineInParallelMatchesTheSpecAndOneThread) {
  ASSERT_GT(compute_threads(), 0);
  CallSpec s;
  strided(s);
  s.batch = 2, s.heads = 8, s.kv_heads = 2, s.q_len = 200, s.kv_len = 333, s.head_dim = 48, s.value_dim = 40;
  s.q_lens = {200, 131}, s.kv_lens = {333, 170};
  s.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT, s.window_left = 90;
  s.bias = true, s.bias_varies = {false, true, true};
  s.alibi_slopes = {0.5f, 0.25f, 0.125f, 0.0625f, 0.03125f, 0.015625f, 0.0078125f, 0.00390625f};
  s.sinks = {2.5f, -2.0f, 0.5f, -8.0f, 0.0f, 1.0f, 3.0f, -1.0f};
  s.lse = true;
  for (DType dtype : every_dtype()) {
    SCOPED_TRACE(dtype_name(dtype));
    s.dtype = dtype;
    std::mt19937_64 rng(test_seed());
    TestCall t = make_test_call(s, rng);
    const Expected want = expected_v2(t);
    const Result parallel = run("online", t);
    EXPECT_EQ(mismatches(t, parallel, want.out, want.lse, 1), "");
    const std::vector<unsigned char> parallel_bytes = t.enc.out.bytes;
    const std::vector<float> parallel_lse = t.enc.lse;
    {
      ScopedComputeThreads one(1);
      run("online", t);
    }
    EXPECT_EQ(t.enc.out.bytes, parallel_bytes);
    EXPECT_EQ(0, std::memcmp(t.enc.lse.data(), parallel_lse.data(), parallel_lse.size() * sizeof(float)));
  }
}

// A v1 call and the same call through v2 (dense, neutral fields) give the
// same bits: the v1 entry points run the v2 kernels.
TEST(BuiltinsV2, V1EntryPointsAgreeBitForBitWithV2) {
  const std::pair<ForwardFn, const char*> v1_entries[] = {
      {find_builtin("reference")->forward, "reference"},
      {find_builtin("naive")->forward, "naive"},
      {find_builtin("online")->forward, "online"}};
  for (DType dtype : every_dtype())
    for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT, ATTNCHECK_CAUSAL_BOTTOM_RIGHT}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " causal " + std::to_string(causal));
      CallSpec s;
      s.dtype = dtype, s.causal = causal, s.mask = true;
      std::mt19937_64 rng(test_seed());
      TestCall t = make_test_call(s, rng);
      // v1 has no mask strides: both calls read the expanded, dense mask.
      t.enc.call.mask.data = t.mask.data();
      t.enc.call.mask.stride[0] = s.heads * s.q_len * s.kv_len, t.enc.call.mask.stride[1] = s.q_len * s.kv_len;
      t.enc.call.mask.stride[2] = s.kv_len, t.enc.call.mask.stride[3] = 1;
      attncheck_call v1{};
      v1.dtype = t.enc.call.dtype;
      v1.batch = s.batch, v1.heads = s.heads, v1.q_len = s.q_len, v1.kv_len = s.kv_len;
      v1.head_dim = s.head_dim, v1.value_dim = s.value_dim, v1.causal = causal, v1.scale = s.scale;
      v1.q = t.enc.q.bytes.data(), v1.k = t.enc.k.bytes.data(), v1.v = t.enc.v.bytes.data();
      v1.mask = t.mask.data();
      std::vector<unsigned char> v1_out(t.enc.out.bytes.size());
      v1.out = v1_out.data();
      for (const auto& [forward, name] : v1_entries) {
        char err[256] = "";
        ASSERT_EQ(forward(&v1, err, sizeof err), ATTNCHECK_OK) << name << ": " << err;
        ASSERT_EQ(find_builtin(name)->forward_v2(&t.enc.call, err, sizeof err), ATTNCHECK_OK) << name << ": " << err;
        EXPECT_EQ(v1_out, t.enc.out.bytes) << name;
      }
    }
}

}  // namespace
}  // namespace attncheck
