// The fuzz decoder (problem_decoder.h): every byte sequence decodes to a
// consistent Problem within the features it is allowed, random bytes reach
// every ABI v2 field (odd gaps, lengths of 0, broadcast masks and biases), and
// the committed seed corpora decode to exactly the calls they decoded to
// before the v2 fields were added. Backward problems: always backward, their
// forward part the forward decoding of the same bytes, every gradient case reached.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include "problem/fnv1a.h"
#include "problem/transforms.h"
#include "problem_decoder.h"

#ifndef ATTNCHECK_FUZZ_CORPUS_DIR
#error "ATTNCHECK_FUZZ_CORPUS_DIR must name fuzz/corpus"
#endif

namespace attncheck::fuzz {
namespace {

std::vector<uint8_t> random_bytes(std::mt19937_64& r, std::size_t n) {
  std::vector<uint8_t> b(n);
  for (uint8_t& x : b) x = static_cast<uint8_t>(r());
  return b;
}

TEST(ProblemDecoder, EveryInputIsConsistentAndWithinItsFeatures) {
  std::mt19937_64 r(20261130);
  const FeatureBits sets[] = {0, kV1Features, kAllFeatures, kV1Features | ATTNCHECK_FEATURE_GQA,
                              ATTNCHECK_FEATURE_STRIDES | ATTNCHECK_FEATURE_LENGTHS | ATTNCHECK_FEATURE_BIAS};
  for (int n = 0; n < 3000; ++n) {
    const std::vector<uint8_t> bytes = random_bytes(r, static_cast<std::size_t>(r() % 700));
    for (FeatureBits allowed : sets)
      for (ValueMix mix : {ValueMix::any, ValueMix::finite_only}) {
        const Problem p = decode_problem(bytes.data(), bytes.size(), mix, allowed);
        ASSERT_EQ(p.inconsistency(), "") << "input " << n;
        ASSERT_EQ(p.features() & ~allowed, 0u) << feature_list(p.features()) << " outside " << feature_list(allowed);
        for (double x : p.bias) ASSERT_FALSE(std::isnan(x) || x == INFINITY);
        if (mix == ValueMix::finite_only) {
          for (const auto* t : {&p.q, &p.k, &p.v})
            for (double x : *t) ASSERT_TRUE(std::isfinite(x)) << "input " << n << ": " << p.describe();
        }
      }
  }
}

TEST(ProblemDecoder, RandomBytesReachEveryField) {
  std::mt19937_64 r(7);
  FeatureBits seen = 0;
  bool odd_gap = false, bshd = false, empty_len = false, nan_padding = false, broadcast_mask = false,
       broadcast_bias = false, neg_inf_bias = false, both_windows = false, grouped = false;
  for (int n = 0; n < 4000; ++n) {
    const std::vector<uint8_t> bytes = random_bytes(r, static_cast<std::size_t>(r() % 400));
    const Problem p = decode_problem(bytes.data(), bytes.size(), ValueMix::any, kAllFeatures);
    seen |= p.features();
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
  }
  EXPECT_EQ(seen, kAllFeatures) << feature_list(seen);
  EXPECT_TRUE(odd_gap && bshd && empty_len && nan_padding);
  EXPECT_TRUE(broadcast_mask && broadcast_bias && neg_inf_bias && both_windows && grouped);
}

// The committed seeds of the problem-taking targets (after their pick bytes,
// both value mixes) decode to the calls they decoded to before ABI v2: the
// constant hashes the fingerprints of those calls, computed with the decoder
// of the commit before decode_features existed.
TEST(ProblemDecoder, SeedCorporaKeepTheirMeaning) {
  std::vector<std::filesystem::path> files;
  for (const char* target : {"fuzz_differential", "fuzz_overflow", "fuzz_plugin"})
    for (const auto& e : std::filesystem::directory_iterator(std::string(ATTNCHECK_FUZZ_CORPUS_DIR) + "/" + target))
      if (e.path().filename().string().rfind("v2_", 0) != 0) files.push_back(e.path());  // v2 seeds are new
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 25u);
  Fnv1a h(Fnv1a::kSeedBasis);
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<uint8_t> d((std::istreambuf_iterator<char>(in)), {});
    const std::size_t skip = std::min<std::size_t>(d.size(), f.parent_path().filename() == "fuzz_overflow" ? 3 : 2);
    for (ValueMix mix : {ValueMix::any, ValueMix::finite_only})
      h.u64(problem_fingerprint(decode_problem(d.data() + skip, d.size() - skip, mix)));
  }
  EXPECT_EQ(h.value, 0xc0ae7aff6968fcbaull);
}

// ---- backward problems (decode_backward_problem) -------------------------

// The problem without its gradient fields.
Problem forward_part(Problem p) {
  p.dout.clear();
  p.layouts.dout = p.layouts.dq = p.layouts.dk = p.layouts.dv = TensorLayout{};
  return p;
}

TEST(BackwardDecoder, EveryInputIsABackwardProblemWithinItsFeatures) {
  std::mt19937_64 r(20261201);
  const FeatureBits sets[] = {kV1Features, kAllFeatures, kEveryFeature, kV1Features | ATTNCHECK_FEATURE_STRIDES,
                              ATTNCHECK_FEATURE_LENGTHS | ATTNCHECK_FEATURE_GQA};
  for (int n = 0; n < 2000; ++n) {
    const std::vector<uint8_t> bytes = random_bytes(r, static_cast<std::size_t>(r() % 900));
    for (FeatureBits allowed : sets)
      for (ValueMix mix : {ValueMix::any, ValueMix::finite_only}) {
        const Problem p = decode_backward_problem(bytes.data(), bytes.size(), mix, allowed);
        ASSERT_TRUE(p.is_backward()) << "input " << n;
        ASSERT_EQ(p.inconsistency(), "") << "input " << n;
        ASSERT_EQ(p.features() & ~(allowed | kBackwardFeature), 0u) << feature_list(p.features());
        if (!(allowed & ATTNCHECK_FEATURE_STRIDES)) {
          ASSERT_TRUE(p.layouts.all_dense());
        }
        for (double x : p.dout) ASSERT_TRUE(std::isnan(x) || round_to(p.dtype, x) == x);
        if (mix == ValueMix::finite_only) {
          for (double x : p.dout) ASSERT_TRUE(std::isfinite(x)) << "input " << n;
        }
        // Its forward part is the forward problem of the same bytes, and
        // decode_problem ignores the backward bit.
        const Problem forward = decode_problem(bytes.data(), bytes.size(), mix, allowed);
        ASSERT_FALSE(forward.is_backward());
        ASSERT_EQ(problem_fingerprint(forward_part(p)), problem_fingerprint(forward)) << "input " << n;
        ASSERT_EQ(problem_fingerprint(decode_problem(bytes.data(), bytes.size(), mix, allowed | kBackwardFeature)),
                  problem_fingerprint(forward));
      }
  }
}

TEST(BackwardDecoder, RandomBytesReachEveryGradientCase) {
  std::mt19937_64 r(11);
  bool nan_padding = false, huge_padding = false, like_q = false, own = false, like_forward = false, dense = false,
       raw_values = false;
  for (int n = 0; n < 4000; ++n) {
    const std::vector<uint8_t> bytes = random_bytes(r, static_cast<std::size_t>(r() % 500));
    const Problem p = decode_backward_problem(bytes.data(), bytes.size(), ValueMix::any, kAllFeatures);
    const Shape& s = p.shape;
    if (!p.q_lens.empty() && p.q_lens[0] < s.q_len) {
      const double x = p.dout[p.out_at(0, s.q_len - 1, 0)];
      nan_padding |= std::isnan(x);
      huge_padding |= std::abs(x) == max_finite(p.dtype);
    }
    const ViewLayouts& l = p.layouts;
    dense |= l.gradients_dense();
    if (l.forward_dense() || l.gradients_dense()) continue;
    like_q |= l.dout == l.q && l.dk == l.q && !(l.q == l.k);
    like_forward |= l.dout == l.out && l.dq == l.q && l.dk == l.k && l.dv == l.v && !(l.q == l.k);
    own |= !(l.dout == l.out) && !(l.dout == l.q) && !(l.dk == l.dv);
    for (double x : p.dout) raw_values |= std::isfinite(x) && x != 0 && std::abs(x) < 1e-3;
  }
  EXPECT_TRUE(nan_padding && huge_padding);
  EXPECT_TRUE(like_q && own && like_forward && dense && raw_values);
}

// The bytes a backward seed ends with name its gradient fields (make_seed_corpus.py):
// every fuzz_gradients seed decodes to a backward problem, and the one with
// strided gradient views decodes to them.
TEST(BackwardDecoder, GradientSeedsDecodeToBackwardProblems) {
  int seeds = 0;
  bool strided = false;
  for (const auto& e : std::filesystem::directory_iterator(std::string(ATTNCHECK_FUZZ_CORPUS_DIR) + "/fuzz_gradients")) {
    std::ifstream in(e.path(), std::ios::binary);
    const std::vector<uint8_t> d((std::istreambuf_iterator<char>(in)), {});
    const std::size_t skip = std::min<std::size_t>(d.size(), 2);
    const Problem p = decode_backward_problem(d.data() + skip, d.size() - skip, ValueMix::any, kEveryFeature);
    EXPECT_TRUE(p.is_backward()) << e.path();
    EXPECT_EQ(p.inconsistency(), "") << e.path();
    strided |= !p.layouts.gradients_dense();
    ++seeds;
  }
  EXPECT_GE(seeds, 5);
  EXPECT_TRUE(strided);
}

}  // namespace
}  // namespace attncheck::fuzz
