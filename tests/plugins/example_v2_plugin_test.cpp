// The v2 example plugin (plugins/example_c/example_attention_v2.c), loaded with dlopen
// and called on hand-built v2 calls (v2_test_call.h), against the spec's formulas
// computed straight in long double (v2_spec_case.h). Until the checker's v2 host lands
// this is what checks the plugin; each feature alone, then all together at random.
// Seeded from ATTNCHECK_SEED (printed), default 20261130.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>

#include "v2_random_case.h"
#include "v2_test_plugin.h"

namespace {

using namespace v2test;

constexpr attncheck_dtype kDtypes[] = {ATTNCHECK_F32, ATTNCHECK_F64, ATTNCHECK_F16, ATTNCHECK_BF16};

// ATTNCHECK_EXAMPLE_V2_PLUGIN in the environment loads another build of it (a
// deliberately broken copy, to see these tests fail).
const LoadedPlugin& plugin() {
  static const LoadedPlugin p(std::getenv("ATTNCHECK_EXAMPLE_V2_PLUGIN") ? std::getenv("ATTNCHECK_EXAMPLE_V2_PLUGIN")
                                                                         : ATTNCHECK_EXAMPLE_V2_PLUGIN);
  return p;
}

std::string run(const Case& c, Encoded& e) { return run_on(*plugin().v2, c, e); }

std::string run(const Case& c) {
  Encoded e;
  return run(c, e);
}

class ExampleV2 : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugin().handle) << plugin().error;
    ASSERT_TRUE(plugin().v2);
  }
};

// ---- the descriptor ---------------------------------------------------------------------

TEST_F(ExampleV2, DeclaresEveryFeatureAndGradients) {
  const attncheck_impl_v2& impl = *plugin().v2;
  EXPECT_EQ(impl.abi_version, ATTNCHECK_ABI_VERSION_2);
  EXPECT_EQ(impl.features, (ATTNCHECK_FEATURE_LSE << 1) - 1) << "all 11 ATTNCHECK_FEATURE_* bits";
  EXPECT_STREQ(impl.name, "example_c_v2");
  EXPECT_NE(impl.forward, nullptr);
  EXPECT_NE(impl.backward, nullptr);  // example_v2_backward_test checks it
}

// ---- each feature alone ---------------------------------------------------------------

TEST_F(ExampleV2, DenseCallsMatchTheSpecInEveryDtypeAndCausalRule) {
  for (attncheck_dtype t : kDtypes)
    for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT, ATTNCHECK_CAUSAL_BOTTOM_RIGHT})
      for (int64_t q_len : {3, 6}) {  // q_len > kv_len leaves bottom-right rows empty
        Case c = shaped(t, 2, 2, 2, q_len, 5, 4, 3);
        c.causal = causal;
        EXPECT_EQ(run(c), "") << name_of(t) << " causal " << causal << " q_len " << q_len;
      }
}

TEST_F(ExampleV2, StridedViewsAreReadThroughTheirStridesAndGapsStayUntouched) {
  for (attncheck_dtype t : kDtypes) {
    Case c = shaped(t, 2, 3, 3, 4, 5, 3, 2);
    c.q_layout = c.k_layout = c.v_layout = c.out_layout = bshd_padded();
    EXPECT_EQ(run(c), "") << name_of(t) << " bshd";
    // Head outermost, columns of one row apart, different per tensor.
    c.q_layout = Layout{{1, 0, 2, 3}, {1, 0, 2}, 1};
    c.k_layout = Layout{{2, 1, 0, 3}, {0, 3, 1}, 2};
    c.v_layout = Layout{{0, 1, 2, 3}, {5, 0, 0}, 0};
    c.out_layout = Layout{{2, 0, 1, 3}, {1, 2, 4}, 5};
    EXPECT_EQ(run(c), "") << name_of(t) << " mixed";
  }
}

TEST_F(ExampleV2, GroupedQueryHeadsReadTheKvHeadOfTheirGroup) {
  for (attncheck_dtype t : kDtypes)
    for (int64_t kv_heads : {1, 2, 3}) {
      Case c = shaped(t, 2, 6, kv_heads, 3, 4, 2, 2);
      EXPECT_EQ(run(c), "") << name_of(t) << " kv_heads " << kv_heads;
    }
}

TEST_F(ExampleV2, LengthsNeverReadPaddingNorWritePaddingRows) {
  for (attncheck_dtype t : kDtypes)
    for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_BOTTOM_RIGHT}) {
      Case c = shaped(t, 4, 2, 1, 4, 5, 3, 2);
      c.q_lens = {4, 2, 0, 3};
      c.kv_lens = {5, 3, 2, 0};  // batch 3 has no keys: its rows are empty
      c.causal = causal;
      c.want_lse = true;
      c.out_layout = bshd_padded();
      // Padding of the mask and bias (set to "attend" and NaN by encode_call) must not be read either.
      c.mask.assign(static_cast<size_t>(4 * 2 * 4 * 5), 1);
      c.bias.assign(c.mask.size(), 0.25);
      EXPECT_EQ(run(c), "") << name_of(t) << " causal " << causal;
    }
}

TEST_F(ExampleV2, WindowsAlignToTheDiagonal) {
  for (attncheck_dtype t : kDtypes)
    for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT, ATTNCHECK_CAUSAL_BOTTOM_RIGHT})
      for (auto [left, right] : {std::pair<int64_t, int64_t>{1, 0}, {0, 2}, {2, -1}, {-1, 1}}) {
        Case c = shaped(t, 1, 2, 2, 3, 7, 2, 2);
        c.causal = causal;
        c.window_left = left, c.window_right = right;
        EXPECT_EQ(run(c), "") << name_of(t) << " causal " << causal << " window " << left << "," << right;
      }
  // By hand: one query, 5 keys, no causal rule: d_0 = 0 + 5 - 1 = 4, and window_left = 1
  // admits keys 3 and 4. With q = 0 both weigh 1/2; v_j = one-hot(j) shows which.
  Case c = shaped(ATTNCHECK_F64, 1, 1, 1, 1, 5, 1, 5);
  c.q = {0};
  for (int64_t j = 0; j < 5; ++j)
    for (int64_t col = 0; col < 5; ++col) c.v[j * 5 + col] = j == col;
  c.window_left = 1;
  Encoded e;
  ASSERT_EQ(run(c, e), "");
  for (int64_t col = 0; col < 5; ++col)
    EXPECT_EQ(decode(ATTNCHECK_F64, e.out.at(0, 0, 0, col)), col >= 3 ? 0.5 : 0.0) << col;
}

TEST_F(ExampleV2, SoftcapBoundsTheLogitsBeforeTheBias) {
  for (attncheck_dtype t : kDtypes) {
    Case c = shaped(t, 1, 2, 2, 3, 4, 3, 2);
    c.scale = 4;  // logits up to 48: far past the cap
    c.softcap = 1.5;
    EXPECT_EQ(run(c), "") << name_of(t);
    c.bias.assign(static_cast<size_t>(2 * 3 * 4), 0);
    std::mt19937 rng(seed() + 7);
    for (double& b : c.bias) b = grid(rng, 32, 0.125);  // up to +-4, beyond the cap
    EXPECT_EQ(run(c), "") << name_of(t) << " with bias";
  }
}

TEST_F(ExampleV2, BiasIsReadThroughItsStridesAndOnlyMinusInfinityHides) {
  for (attncheck_dtype t : kDtypes)
    for (int broadcast = 0; broadcast < 8; ++broadcast) {
      Case c = shaped(t, 2, 2, 2, 3, 4, 2, 2);
      c.bias_broadcast = Broadcast{(broadcast & 1) != 0, (broadcast & 2) != 0, (broadcast & 4) != 0};
      const auto ext = c.stored_extents(c.bias_broadcast);
      c.bias.assign(static_cast<size_t>(ext[0] * ext[1] * ext[2] * ext[3]), 0);
      std::mt19937 rng(seed() + 11 + broadcast);
      for (double& b : c.bias) b = std::uniform_int_distribution<int>(0, 4)(rng) == 0 ? -INFINITY : grid(rng, 32, 0.125);
      EXPECT_EQ(run(c), "") << name_of(t) << " broadcast " << broadcast;
    }
  // A key whose bias is -1e4 stays visible: alone in its row it takes all the weight.
  Case c = shaped(ATTNCHECK_F64, 1, 1, 1, 1, 2, 1, 1);
  c.bias = {-1e4, -INFINITY};
  c.v = {0.75, 2};
  Encoded e;
  ASSERT_EQ(run(c, e), "");
  EXPECT_EQ(decode(ATTNCHECK_F64, e.out.at(0, 0, 0, 0)), 0.75);
  // A row whose every key has bias -inf sees no key: out 0 (not 0/0), lse -inf.
  c.bias = {-INFINITY, -INFINITY};
  c.want_lse = true;
  ASSERT_EQ(run(c, e), "");
  EXPECT_EQ(decode(ATTNCHECK_F64, e.out.at(0, 0, 0, 0)), 0.0);
  EXPECT_EQ(e.lse[0], -INFINITY);
}

TEST_F(ExampleV2, MaskIsReadThroughItsStridesIncludingBroadcast) {
  for (attncheck_dtype t : kDtypes)
    for (int broadcast = 0; broadcast < 8; ++broadcast) {
      Case c = shaped(t, 2, 2, 1, 3, 4, 2, 2);
      c.mask_broadcast = Broadcast{(broadcast & 1) != 0, (broadcast & 2) != 0, (broadcast & 4) != 0};
      const auto ext = c.stored_extents(c.mask_broadcast);
      c.mask.assign(static_cast<size_t>(ext[0] * ext[1] * ext[2] * ext[3]), 0);
      std::mt19937 rng(seed() + 13 + broadcast);
      for (uint8_t& m : c.mask) m = static_cast<uint8_t>(std::uniform_int_distribution<int>(0, 2)(rng) * 60);
      c.want_lse = true;
      EXPECT_EQ(run(c), "") << name_of(t) << " broadcast " << broadcast;
    }
}

TEST_F(ExampleV2, AlibiSubtractsSlopeTimesDistanceToTheDiagonal) {
  for (attncheck_dtype t : kDtypes)
    for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT}) {
      Case c = shaped(t, 1, 3, 1, 3, 6, 2, 2);
      c.causal = causal;
      c.alibi_slopes = {0.5f, 0.25f, 0.0625f};
      c.want_lse = true;
      EXPECT_EQ(run(c), "") << name_of(t) << " causal " << causal;
    }
}

TEST_F(ExampleV2, SinksJoinTheDenominatorAsRawLogits) {
  for (attncheck_dtype t : kDtypes) {
    Case c = shaped(t, 2, 2, 2, 3, 4, 2, 2);
    c.sinks = {-1.5f, 3.25f};
    c.scale = 2;  // no scale applies to a sink: this would show it
    c.want_lse = true;
    EXPECT_EQ(run(c), "") << name_of(t);
  }
  // By hand: q = 0, one key, sink 0: p = 1/2, out = v/2, lse = log 2. A row that sees no
  // key: out 0, lse = the sink.
  Case c = shaped(ATTNCHECK_F64, 1, 1, 1, 2, 1, 1, 1);
  c.q = {0, 0};
  c.v = {1.5};
  c.sinks = {0};
  c.mask = {1, 0};
  c.want_lse = true;
  Encoded e;
  ASSERT_EQ(run(c, e), "");
  EXPECT_EQ(decode(ATTNCHECK_F64, e.out.at(0, 0, 0, 0)), 0.75);
  EXPECT_FLOAT_EQ(e.lse[0], std::log(2.0f));
  EXPECT_EQ(decode(ATTNCHECK_F64, e.out.at(0, 0, 1, 0)), 0.0);
  EXPECT_EQ(e.lse[1], 0.0f);
}

TEST_F(ExampleV2, LseIsTheNaturalLogAndMinusInfinityForEmptyRows) {
  // q = 0: n visible keys of logit 0 give lse = log n.
  Case c = shaped(ATTNCHECK_F32, 1, 1, 1, 4, 4, 2, 1);
  std::fill(c.q.begin(), c.q.end(), 0.0);
  c.causal = ATTNCHECK_CAUSAL_TOP_LEFT;  // row i sees i + 1 keys
  c.mask.assign(16, 1);
  for (int64_t j = 0; j < 4; ++j) c.mask[3 * 4 + j] = 0;  // row 3 sees none
  c.want_lse = true;
  Encoded e;
  ASSERT_EQ(run(c, e), "");
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(e.lse[i], std::log(static_cast<float>(i + 1))) << i;
  EXPECT_EQ(e.lse[3], -INFINITY);
  EXPECT_EQ(decode(ATTNCHECK_F32, e.out.at(0, 0, 3, 0)), 0.0);
  // lse = NULL with every other feature: nothing is written there (nothing to check but out).
  c.want_lse = false;
  EXPECT_EQ(run(c), "");
}

TEST_F(ExampleV2, NanScaleIsOneOverSqrtHeadDim) {
  for (attncheck_dtype t : kDtypes) {
    Case c = shaped(t, 1, 1, 1, 2, 3, 4, 2);
    Encoded by_default, explicit_scale;
    ASSERT_EQ(run(c, by_default), "");
    c.scale = 0.5;  // 1/sqrt(4)
    ASSERT_EQ(run(c, explicit_scale), "");
    EXPECT_EQ(by_default.out.bytes, explicit_scale.out.bytes) << name_of(t);
  }
}

TEST_F(ExampleV2, LargeLogitsStayFinite) {
  for (attncheck_dtype t : kDtypes) {
    Case c = shaped(t, 1, 2, 2, 3, 5, 4, 2);
    c.scale = 256;  // logits up to 4096, most past 709: exp() overflows without the max subtraction
    c.sinks = {8.0f, -8.0f};
    c.want_lse = true;
    EXPECT_EQ(run(c), "") << name_of(t);
  }
  // A sink far above the logits: lse = 800 + log(1 + e^-800) = 800, out = v e^-800 = 0.
  Case c = shaped(ATTNCHECK_F64, 1, 1, 1, 1, 1, 1, 1);
  c.q = {0};
  c.sinks = {800.0f};
  c.want_lse = true;
  Encoded e;
  ASSERT_EQ(run(c, e), "");
  EXPECT_EQ(e.lse[0], 800.0f);
  EXPECT_EQ(decode(ATTNCHECK_F64, e.out.at(0, 0, 0, 0)), 0.0);
}

// The 16-bit stores round once, from double, to nearest even. Rounding through float
// first is off by a unit where the double lies just past a 16-bit tie that float
// rounds onto: with q = 0, one key of value v and a sink s, out = v / (1 + e^s), and
// the test searches the sinks for such an out.
TEST_F(ExampleV2, SixteenBitStoresRoundOnceFromDouble) {
  struct Format {
    attncheck_dtype dtype;
    int mantissa_bits;
  };
  for (Format f : {Format{ATTNCHECK_F16, 10}, Format{ATTNCHECK_BF16, 7}}) {
    // The 16-bit value nearest to y, ties to even, of y in [1, 2) (one binade keeps it short).
    auto round16 = [&](double y) { return std::nearbyint(std::ldexp(y, f.mantissa_bits)) / std::ldexp(1.0, f.mantissa_bits); };
    const double v = 1.875;
    float sink = 0;
    double y = 0;
    bool found = false;
    for (int n = 1; n < 200000 && !found; ++n) {
      sink = -static_cast<float>(n) * 1e-5f;  // out in (0.9375, 1.875): the binade [1, 2) for most
      y = v / (1 + std::exp(static_cast<double>(sink)));
      const double tie_distance = std::fabs(std::ldexp(y, f.mantissa_bits) - std::floor(std::ldexp(y, f.mantissa_bits)) - 0.5);
      found = y >= 1 && y < 2 && round16(static_cast<float>(y)) != round16(y) && tie_distance > 1e-9;
    }
    ASSERT_TRUE(found) << name_of(f.dtype);
    Case c = shaped(f.dtype, 1, 1, 1, 1, 1, 1, 1);
    c.q = {0};
    c.v = {v};
    c.sinks = {sink};
    Encoded e;
    ASSERT_EQ(run(c, e), "");
    EXPECT_EQ(decode(f.dtype, e.out.at(0, 0, 0, 0)), round16(y)) << name_of(f.dtype) << " sink " << sink << " out " << y;
    // An exact tie goes to even: two equal weights on 1 and the next value up give
    // 1 + half a unit, stored as 1.
    Case tie = shaped(f.dtype, 1, 1, 1, 1, 2, 1, 1);
    tie.q = {0};
    tie.v = {1, 1 + std::ldexp(1.0, -f.mantissa_bits)};
    ASSERT_EQ(run(tie, e), "");
    EXPECT_EQ(decode(f.dtype, e.out.at(0, 0, 0, 0)), 1.0) << name_of(f.dtype);
    // ... and carries into the next binade: between 2 - 1 unit (odd) and 2, it is 2.
    tie.v = {2 - std::ldexp(1.0, -f.mantissa_bits), 2};
    ASSERT_EQ(run(tie, e), "");
    EXPECT_EQ(decode(f.dtype, e.out.at(0, 0, 0, 0)), 2.0) << name_of(f.dtype);
  }
}

// Every 16-bit value but NaN, as the value of the one key a row sees (weight exactly 1),
// comes back bit for bit: the load and the store invert each other on the whole format.
// (-0 comes back as +0: the sum 0 + 1 * -0 is +0, and both are the exact answer.)
TEST_F(ExampleV2, EverySixteenBitValueRoundTrips) {
  for (attncheck_dtype t : {ATTNCHECK_F16, ATTNCHECK_BF16}) {
    std::vector<uint16_t> patterns;
    for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
      unsigned char raw[8] = {};  // decode's widest read
      const uint16_t b16 = static_cast<uint16_t>(bits);
      std::memcpy(raw, &b16, 2);
      if (!std::isnan(decode(t, raw))) patterns.push_back(b16);
    }
    Case c = shaped(t, 1, 1, 1, 1, 1, 1, static_cast<int64_t>(patterns.size()));
    for (size_t col = 0; col < patterns.size(); ++col) {
      unsigned char raw[8] = {};
      std::memcpy(raw, &patterns[col], 2);
      c.v[col] = decode(t, raw);
    }
    Encoded e;
    encode_call(c, e);
    ASSERT_TRUE(e.exact);
    char err[256] = "";
    ASSERT_EQ(plugin().v2->forward(&e.call, err, sizeof err), ATTNCHECK_OK) << err;
    int wrong = 0;
    for (size_t col = 0; col < patterns.size(); ++col) {
      uint16_t got;
      std::memcpy(&got, e.out.at(0, 0, 0, static_cast<int64_t>(col)), 2);
      const bool zero = (patterns[col] & 0x7FFF) == 0 && (got & 0x7FFF) == 0;
      if (got != patterns[col] && !zero && wrong++ < 5)
        ADD_FAILURE() << name_of(t) << ": value bits 0x" << std::hex << patterns[col] << " came back as 0x" << got;
    }
    EXPECT_EQ(wrong, 0) << name_of(t);
  }
}

// ---- everything together -------------------------------------------------------------

TEST_F(ExampleV2, EveryFeatureTogetherAtRandom) {
  std::mt19937 rng(seed());
  for (int n = 0; n < 400; ++n) {
    const Case c = random_case(rng, kDtypes);
    const std::string problems = run(c);
    ASSERT_EQ(problems, "") << "random case " << n << " (" << name_of(c.dtype) << ", batch " << c.batch << ", heads "
                            << c.heads << "/" << c.kv_heads << ", q_len " << c.q_len << ", kv_len " << c.kv_len
                            << ", causal " << c.causal << ", window " << c.window_left << "," << c.window_right
                            << ", softcap " << c.softcap << ", mask " << !c.mask.empty() << ", bias "
                            << !c.bias.empty() << ", alibi " << !c.alibi_slopes.empty() << ", sinks "
                            << !c.sinks.empty() << ", lens " << !c.kv_lens.empty() << ")";
  }
}

// ---- version 1 -------------------------------------------------------------------------

TEST_F(ExampleV2, TheV1ExportGivesTheDenseV2Answer) {
  ASSERT_TRUE(plugin().v1);
  EXPECT_EQ(plugin().v1->abi_version, ATTNCHECK_ABI_VERSION);
  for (attncheck_dtype t : kDtypes)
    for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT, ATTNCHECK_CAUSAL_BOTTOM_RIGHT}) {
      Case c = shaped(t, 2, 2, 2, 3, 4, 3, 2);
      c.causal = causal;
      c.mask.assign(static_cast<size_t>(2 * 2 * 3 * 4), 1);
      c.mask[5] = c.mask[7] = 0;
      Encoded e;
      ASSERT_EQ(run(c, e), "");
      std::vector<unsigned char> out1(e.out.bytes.size(), 0xFF);
      attncheck_call c1{};
      c1.dtype = t;
      c1.batch = 2, c1.heads = 2, c1.q_len = 3, c1.kv_len = 4, c1.head_dim = 3, c1.value_dim = 2;
      c1.causal = causal;
      c1.scale = NAN;
      c1.q = e.call.q.data, c1.k = e.call.k.data, c1.v = e.call.v.data;
      c1.mask = c.mask.data();
      c1.out = out1.data();
      char err[256] = "";
      ASSERT_EQ(plugin().v1->forward(&c1, err, sizeof err), ATTNCHECK_OK) << err;
      EXPECT_EQ(out1, e.out.bytes) << name_of(t) << " causal " << causal;
    }
}

}  // namespace
