// The fuzz targets' problems (fuzz_problems.h: the generators reading the
// fuzzer's bytes): every byte string gives a consistent problem within the
// options (features, caps, finite values where asked), the empty input the
// simplest problem, and random bytes reach every feature, dtype and value
// family the options allow. The seed corpus writer (seed_corpus.h): an input
// cut to the bytes its problem read replays that problem exactly, and the
// committed corpora and dictionary are what the writer writes now.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include <stdlib.h>

#include "casefile/case_file.h"
#include "driver/law_run.h"
#include "fuzz_problems.h"
#include "impls/in_process.h"
#include "law_sweep.h"
#include "gen/generators.h"
#include "problem/transforms.h"
#include "run/shape_flags.h"
#include "seed_corpus.h"

#ifndef ATTNCHECK_FUZZ_DIR
#error "ATTNCHECK_FUZZ_DIR must name the repository's fuzz/ folder"
#endif

namespace attncheck::fuzz {
namespace {

std::vector<uint8_t> random_bytes(std::mt19937_64& r, std::size_t n) {
  std::vector<uint8_t> b(n);
  for (uint8_t& x : b) x = static_cast<uint8_t>(r());
  return b;
}

bool all_finite(const std::vector<double>& t) {
  return std::all_of(t.begin(), t.end(), [](double x) { return std::isfinite(x); });
}

// The whole problem as text: two problems are the same call when these agree.
std::string as_json(const Problem& p) {
  return case_to_json(failure_record(p, "matches_oracle", "reference", "builtin:reference", "libfuzzer", 0, ""));
}

const FuzzCaps kCaps{3, 2, 5, 4};  // not the defaults: the caps come from the options

TEST(FuzzProblems, EveryInputIsConsistentAndWithinItsOptions) {
  std::mt19937_64 r(20261130);
  const FeatureBits sets[] = {0, kV1Features, kAllFeatures, kEveryFeature, kV1Features | ATTNCHECK_FEATURE_GQA,
                              ATTNCHECK_FEATURE_STRIDES | ATTNCHECK_FEATURE_LENGTHS | ATTNCHECK_FEATURE_BIAS};
  for (int n = 0; n < 1500; ++n) {
    const std::vector<uint8_t> bytes = random_bytes(r, static_cast<std::size_t>(r() % 1500));
    for (FeatureBits allowed : sets)
      for (Problems kind : {Problems::forward, Problems::backward})
        for (bool finite : {false, true}) {
          const GenOptions o = fuzz_options(allowed, kind, finite, kCaps);
          const Problem p = problem_from_bytes(o, bytes.data(), bytes.size());
          ASSERT_EQ(p.inconsistency(), "") << "input " << n;
          ASSERT_EQ(p.is_backward(), kind == Problems::backward) << "input " << n;
          ASSERT_EQ(p.features() & ~(allowed | kBackwardFeature), 0u)
              << feature_list(p.features()) << " outside " << feature_list(allowed);
          const Shape& s = p.shape;
          ASSERT_TRUE(s.batch <= 3 && s.q_len <= 5 && s.kv_len <= 5 && s.head_dim <= 4 && s.value_dim <= 4)
              << p.describe();
          // Heads: the cap, or 4, 6 or 8 for a grouped call (feature_draws.h, draw_kv_heads).
          ASSERT_TRUE(s.heads <= 2 || (s.kv_head_count() < s.heads && s.heads <= 8)) << p.describe();
          for (double x : p.bias) ASSERT_NE(x, INFINITY);
          if (finite) {
            for (const auto* t : {&p.q, &p.k, &p.v, &p.dout}) ASSERT_TRUE(all_finite(*t)) << "input " << n;
            ASSERT_TRUE(std::isnan(p.scale) || std::isfinite(p.scale));
          }
        }
  }
}

TEST(FuzzProblems, TheEmptyInputIsTheSimplestProblem) {
  for (FeatureBits allowed : {kV1Features, kAllFeatures}) {
    const Problem p = problem_from_bytes(fuzz_options(allowed), nullptr, 0);
    EXPECT_EQ(p.dtype, every_dtype()[0]);
    const Shape& s = p.shape;
    EXPECT_TRUE(s.batch == 1 && s.heads == 1 && s.q_len == 1 && s.kv_len == 1 && s.head_dim == 1 && s.value_dim == 1)
        << p.describe();
    EXPECT_EQ(p.features(), 0u) << feature_list(p.features());
    EXPECT_TRUE(std::isnan(p.scale));  // the default scale
    for (const auto* t : {&p.q, &p.k, &p.v})
      for (double x : *t) EXPECT_TRUE(x == 0 && !std::signbit(x));
    // Zeros past the end read the same as no bytes.
    const std::vector<uint8_t> zeros(100, 0);
    EXPECT_EQ(as_json(problem_from_bytes(fuzz_options(allowed), zeros.data(), zeros.size())), as_json(p));
  }
  const Problem b = problem_from_bytes(fuzz_options(kEveryFeature, Problems::backward), nullptr, 0);
  EXPECT_EQ(b.features(), kBackwardFeature);
  for (double x : b.dout) EXPECT_EQ(x, 0.0);
}

// The fuzz smoke's timeouts of 2026-12-07 (fuzz_differential, fuzz_overflow): once a
// source of choices is exhausted it answers 0 for ever, and draw_kv_broadcast looped
// until k or v was expanded, which with every choice 0 never happened. The empty
// input, with broadcast K/V required and two batch entries (an axis to expand over),
// must end with a consistent problem, v expanded.
TEST(FuzzProblems, AnExhaustedSourceEndsEveryDraw) {
  GenOptions o = fuzz_options(kAllFeatures | kBroadcastKvFeature);
  o.required = kBroadcastKvFeature;
  o.min_batch = 2;
  o.max_batch = std::max<int64_t>(o.max_batch, 2);
  const Problem p = problem_from_bytes(o, nullptr, 0);
  EXPECT_EQ(p.inconsistency(), "");
  EXPECT_EQ(p.shape.batch, 2);
  EXPECT_TRUE(p.features() & kBroadcastKvFeature) << feature_list(p.features());
}

TEST(FuzzProblems, CapsHoldAndAreReached) {
  std::mt19937_64 r(5);
  Shape most{};
  for (int n = 0; n < 3000; ++n) {
    const std::vector<uint8_t> bytes = random_bytes(r, 1 + static_cast<std::size_t>(r() % 600));
    const Problem p = problem_from_bytes(fuzz_options(kV1Features, Problems::forward, false, kCaps), bytes.data(), bytes.size());
    const Shape& s = p.shape;
    ASSERT_TRUE(s.batch <= 3 && s.heads <= 2 && s.q_len <= 5 && s.kv_len <= 5 && s.head_dim <= 4 && s.value_dim <= 4)
        << p.describe();
    most = {std::max(most.batch, s.batch), std::max(most.heads, s.heads), std::max(most.q_len, s.q_len),
            std::max(most.kv_len, s.kv_len), std::max(most.head_dim, s.head_dim), std::max(most.value_dim, s.value_dim)};
  }
  EXPECT_TRUE(most.batch == 3 && most.heads == 2 && most.q_len == 5 && most.kv_len == 5 && most.head_dim == 4 &&
              most.value_dim == 4);
}

TEST(FuzzProblems, RandomBytesReachEveryFeatureDtypeAndFamily) {
  std::mt19937_64 r(7);
  FeatureBits seen = 0;
  std::set<DType> dtypes;
  unsigned families = 0;
  bool odd_gap = false, bshd = false, empty_len = false, nan_padding = false, broadcast_mask = false,
       broadcast_bias = false, neg_inf_bias = false, both_windows = false, grouped = false, nan = false,
       inf = false, subnormal = false, top_left = false, bottom_right = false, raw_scale = false;
  const GenOptions o = fuzz_options(kEveryFeature, Problems::forward);
  for (int n = 0; n < 4000; ++n) {
    const std::vector<uint8_t> bytes = random_bytes(r, 1 + static_cast<std::size_t>(r() % 1200));
    gen::ByteChoices choices(bytes.data(), bytes.size());
    const Problem p = draw_problem_from(o, choices);
    families |= choices.families();
    seen |= p.features();
    dtypes.insert(p.dtype);
    for (const TensorLayout* l : {&p.layouts.q, &p.layouts.k, &p.layouts.v, &p.layouts.out}) {
      odd_gap |= std::any_of(l->gap.begin(), l->gap.end(), [](int64_t g) { return g % 2 == 1; });
      bshd |= l->order == std::array<uint8_t, 3>{0, 2, 1};
    }
    for (int32_t len : p.kv_lens) empty_len |= len == 0;
    if (!p.q_lens.empty() && p.q_lens[0] < p.shape.q_len) nan_padding |= std::isnan(p.q[p.q_at(0, p.shape.q_len - 1, 0)]);
    broadcast_mask |= p.has_mask() && !p.mask_broadcast.full();
    broadcast_bias |= p.has_bias() && !p.bias_broadcast.full();
    for (double x : p.bias) neg_inf_bias |= x == -INFINITY;
    both_windows |= p.window_left >= 0 && p.window_right >= 0;
    grouped |= p.shape.kv_head_count() < p.shape.heads;
    for (double x : p.q) {
      nan |= std::isnan(x);
      inf |= std::isinf(x);
      subnormal |= x != 0 && std::abs(x) < min_normal(p.dtype);
    }
    top_left |= p.causal == Causal::top_left;
    bottom_right |= p.causal == Causal::bottom_right;
    raw_scale |= !std::isnan(p.scale) && !std::isfinite(p.scale);
  }
  EXPECT_EQ(seen, kAllFeatures) << feature_list(seen);  // forward problems: no backward bit
  EXPECT_EQ(dtypes.size(), every_dtype().size());
  EXPECT_EQ(families, kAllFamilies | kSpecials | kRawBits);
  EXPECT_TRUE(odd_gap && bshd && empty_len && nan_padding);
  EXPECT_TRUE(broadcast_mask && broadcast_bias && neg_inf_bias && both_windows && grouped);
  EXPECT_TRUE(nan && inf && subnormal && top_left && bottom_right && raw_scale);
  // And a backward problem's own fields: gradient views of their own.
  bool own_views = false;
  const GenOptions ob = fuzz_options(kEveryFeature, Problems::backward);
  for (int n = 0; n < 500 && !own_views; ++n) {
    const std::vector<uint8_t> bytes = random_bytes(r, 1 + static_cast<std::size_t>(r() % 1200));
    const Problem p = problem_from_bytes(ob, bytes.data(), bytes.size());
    own_views |= !(p.layouts.dk == p.layouts.k) || !(p.layouts.dq == p.layouts.q);
  }
  EXPECT_TRUE(own_views);
}

// Check's shape flags, read back from the text check prints them as (the
// fuzz targets' ATTNCHECK_FUZZ_SHAPES): the same flags, and a word that is not
// one of them named.
TEST(FuzzShapes, CheckFlagsReadBackFromTheirText) {
  ShapeFlags f;
  f.profile = "decode", f.head_dims = "64,128", f.q_len = "1..8", f.kv_len = "1024..4096", f.batch = "2", f.heads = "1..2";
  ShapeFlags back;
  std::string error;
  ASSERT_TRUE(read_shape_flags_text(shape_flags_text(f), back, error)) << error;
  EXPECT_EQ(shape_flags_text(back), shape_flags_text(f));
  ASSERT_TRUE(read_shape_flags_text("--kv-len=1..40  --head-dim 128", back = {}, error)) << error;
  EXPECT_EQ(shape_flags_text(back), " --head-dim 128 --kv-len 1..40");
  EXPECT_FALSE(read_shape_flags_text("--head-dim 128 64", back = {}, error));
  EXPECT_NE(error.find("'64' is not a shape flag"), std::string::npos) << error;
  EXPECT_FALSE(read_shape_flags_text("--q-len --kv-len 4", back = {}, error));
  EXPECT_NE(error.find("--q-len needs a value"), std::string::npos) << error;
  EXPECT_FALSE(read_shape_flags_text("--batch=", back = {}, error));
  EXPECT_NE(error.find("--batch needs a value"), std::string::npos) << error;
}

std::optional<FuzzShapes> shapes_of(const char* profile, const char* flags) {
  FuzzShapeEnv env;
  env.profile = profile, env.shapes = flags;
  std::string error;
  std::optional<FuzzShapes> s = read_fuzz_shapes(env, error);
  EXPECT_TRUE(s) << error;
  return s;
}

// With a kernel-shape profile the bytes draw the profile's shapes: the head
// dims kernels specialise for (128 among them) besides odd ones, decode's
// q_len 1..8 and batch and heads up to 2, and the kv_len its flag allows; at
// the caps, head_dim never passes 6.
TEST(FuzzShapes, AProfileDecidesTheShapesTheBytesDraw) {
  const std::optional<FuzzShapes> decode = shapes_of("decode", "--kv-len 1..64");
  ASSERT_TRUE(decode && decode->profile);
  EXPECT_EQ(decode->flags, "--profile decode --kv-len 1..64");
  ASSERT_TRUE(decode->profile->max_q_len == 8 && decode->profile->max_kv_len == 64 && decode->profile->max_batch == 2);
  std::mt19937_64 r(33);
  std::set<int64_t> head_dims, q_lens;
  int64_t longest = 0;
  for (Problems kind : {Problems::forward, Problems::backward}) {
    const GenOptions o = fuzz_options(kV1Features, kind, false, *decode);
    for (int n = 0; n < 1500; ++n) {
      const std::vector<uint8_t> bytes = random_bytes(r, 16 + static_cast<std::size_t>(r() % 48));
      const Problem p = problem_from_bytes(o, bytes.data(), bytes.size());
      ASSERT_EQ(p.inconsistency(), "") << p.describe();
      const Shape& s = p.shape;
      // The profile's extents (src/gen/profiles.cpp: decode's q_len 1..8, batch and
      // heads up to 2), kv_len as the flag narrowed it; head dims are its own list's.
      ASSERT_TRUE(s.batch <= o.max_batch && s.heads <= o.max_heads && s.q_len >= 1 && s.q_len <= o.max_q_len &&
                  s.kv_len >= 1 && s.kv_len <= 64 && (s.value_dim <= o.max_value_dim || s.value_dim == s.head_dim))
          << p.describe();
      head_dims.insert(s.head_dim);
      q_lens.insert(s.q_len);
      longest = std::max(longest, s.kv_len);
    }
  }
  for (int64_t d : kKernelHeadDims) EXPECT_TRUE(head_dims.count(d)) << "head_dim " << d << " never drawn";
  EXPECT_TRUE(std::any_of(head_dims.begin(), head_dims.end(), [](int64_t d) {
    return std::find(std::begin(kKernelHeadDims), std::end(kKernelHeadDims), d) == std::end(kKernelHeadDims);
  }));
  EXPECT_TRUE(q_lens.count(1) && q_lens.count(8));
  EXPECT_EQ(longest, 64);
  // --head-dim narrows the profile as on check's command line: every problem at 128.
  const std::optional<FuzzShapes> at128 = shapes_of("decode", "--head-dim 128 --kv-len 1..64");
  ASSERT_TRUE(at128);
  const GenOptions o128 = fuzz_options(kV1Features, Problems::forward, false, *at128);
  for (int n = 0; n < 200; ++n) {
    const std::vector<uint8_t> bytes = random_bytes(r, 64);
    EXPECT_EQ(problem_from_bytes(o128, bytes.data(), bytes.size()).shape.head_dim, 128);
  }
  // No profile: the caps, as before (the committed seed corpora mean what they meant).
  const std::optional<FuzzShapes> caps = shapes_of(nullptr, nullptr);
  ASSERT_TRUE(caps && !caps->profile);
  for (int n = 0; n < 200; ++n) {
    const std::vector<uint8_t> bytes = random_bytes(r, 1 + static_cast<std::size_t>(r() % 600));
    const Problem p = problem_from_bytes(fuzz_options(kAllFeatures, Problems::forward, false, *caps), bytes.data(), bytes.size());
    EXPECT_EQ(as_json(p), as_json(problem_from_bytes(fuzz_options(kAllFeatures), bytes.data(), bytes.size())));
    EXPECT_LE(p.shape.head_dim, 6);
  }
}

// The corpus writer's inputs, cut to what their problem read, replay it
// exactly; so do the same bytes with anything after them, and the random
// buffer they were cut from.
TEST(SeedCorpus, RecordedInputsReplayTheirProblem) {
  for (const SeedTarget& t : seed_targets()) {
    const std::vector<Seed> seeds = choose_seeds(t, 300);
    ASSERT_GT(seeds.size(), 3u) << t.name;
    for (const Seed& s : seeds) {
      if (s.bytes.empty()) continue;  // the empty seed: every choice reads past its end
      const Drawn d = draw_as_target(t, s.bytes.data(), s.bytes.size());
      EXPECT_EQ(d.consumed, s.bytes.size()) << t.name << "/" << s.name << ": cut to what it read";
      std::vector<uint8_t> longer = s.bytes;
      longer.resize(s.bytes.size() + 64, 0xa5);
      EXPECT_EQ(as_json(draw_as_target(t, longer.data(), longer.size()).problem), as_json(d.problem))
          << t.name << "/" << s.name;
    }
  }
}

std::vector<uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The committed corpora are the writer's (rerun build/fuzz/attncheck_fuzz_seed_corpus
// fuzz after changing how the generators read their choices), and together
// they cover all a target's random draws reach.
TEST(SeedCorpus, CommittedCorporaAreTheWritersAndCoverEverything) {
  const std::filesystem::path dir = std::string(ATTNCHECK_FUZZ_DIR) + "/corpus";
  for (const SeedTarget& t : seed_targets()) {
    std::set<std::string> covered;
    std::size_t files = 0;
    for (const Seed& s : choose_seeds(t)) {
      const std::filesystem::path f = dir / t.name / s.name;
      ASSERT_TRUE(std::filesystem::exists(f)) << f << " missing: rerun attncheck_fuzz_seed_corpus";
      ASSERT_EQ(read_file(f), s.bytes) << f << " differs from what the writer writes now";
      const Drawn d = draw_as_target(t, s.bytes.data(), s.bytes.size());
      ASSERT_EQ(d.problem.inconsistency(), "") << f;
      covered.insert(d.covers.begin(), d.covers.end());
      ++files;
    }
    const std::set<std::string> all = reachable(t);
    for (const std::string& item : all) EXPECT_TRUE(covered.count(item)) << t.name << " " << t.prefix << ": " << item;
    for (const char* must : {"dtype:f32", "dtype:f64", "dtype:f16", "dtype:bf16", "family:specials", "family:raw_bits",
                             "family:gaussian", "values:nan", "values:inf", "causal:bottom_right"})
      EXPECT_TRUE(covered.count(must)) << t.name << " " << t.prefix << ": " << must;
    EXPECT_GT(files, 5u);
  }
  std::ifstream dict(std::string(ATTNCHECK_FUZZ_DIR) + "/dicts/problem.dict");
  const std::string text{std::istreambuf_iterator<char>(dict), {}};
  EXPECT_EQ(text, problem_dictionary()) << "fuzz/dicts/problem.dict: rerun attncheck_fuzz_seed_corpus";
}

// A finding of a law that failed on a call it built (masked_keys_ignored's
// masked call) saves that call with its derivation, as check --save-failures does.
TEST(FuzzFinding, SavesTheDerivedCallThatFailed) {
  const std::string dir = (std::filesystem::temp_directory_path() / "attncheck_fuzz_finding_XXXXXX").string();
  std::string made = dir;
  ASSERT_TRUE(::mkdtemp(made.data()));
  auto impl = make_builtin("causal_off_by_one");
  const Law& law = *find_law("masked_keys_ignored");
  RunOptions o;
  o.seed = 1;
  const LawReport r = run_law(law, *impl, o);
  ASSERT_TRUE(r.counterexample) << r.message;
  ASSERT_FALSE(r.counterexample->has_mask());
  ::setenv("ATTNCHECK_REGRESSION_DIR", made.c_str(), 1);
  EXPECT_DEATH(judge(*impl, *r.counterexample, {&law}), "failing call \\(before\\)");
  ::unsetenv("ATTNCHECK_REGRESSION_DIR");
  std::vector<std::filesystem::path> saved;
  for (const auto& e : std::filesystem::directory_iterator(made))
    if (e.path().extension() == ".json") saved.push_back(e.path());
  ASSERT_EQ(saved.size(), 1u);
  const CaseRecord rec = load_case(saved[0].string());
  EXPECT_TRUE(rec.problem.has_mask());
  EXPECT_NE(rec.derivation.find("the call that failed (before)"), std::string::npos) << rec.derivation;
  std::filesystem::remove_all(made);
}

}  // namespace
}  // namespace attncheck::fuzz
