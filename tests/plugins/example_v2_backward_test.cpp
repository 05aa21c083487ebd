// The v2 example plugin's backward (plugins/example_c/example_attention_v2.c), loaded
// with dlopen and called directly (v2_grad_test_plugin.h): dq, dk, dv against central
// differences of the plugin's own forward in f64, each feature alone, then all
// together at random, in every dtype (the plugin computes in double and rounds once, so
// no slack beyond the store's rounding and the differences' own error). Also the
// spec's rules that differences cannot show: exact zeros for rows that see no key and
// keys no row sees, padding and gaps untouched, out and lse (inputs of the backward
// call) unchanged, gradients overwritten (the 0xFF poison is NaN: an accumulating
// backward fails). Seeded from ATTNCHECK_SEED (printed), default 20261130.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "v2_grad_test_plugin.h"
#include "v2_random_case.h"

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

// The case in every dtype against the central differences of the f64 forward.
void expect_gradients(const Case& shape, const GradCase& g, const std::string& what) {
  for (attncheck_dtype t : kDtypes) {
    Case c = shape;
    c.dtype = t;
    EXPECT_EQ(check_backward(*plugin().v2, c, g), "") << name_of(t) << " " << what;
  }
}

class ExampleV2Backward : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugin().handle) << plugin().error;
    ASSERT_TRUE(plugin().v2);
    ASSERT_NE(plugin().v2->backward, nullptr);
  }
};

// ---- each feature alone -----------------------------------------------------------------

TEST_F(ExampleV2Backward, DenseGradientsMatchCentralDifferencesInEveryCausalRule) {
  for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT, ATTNCHECK_CAUSAL_BOTTOM_RIGHT})
    for (int64_t q_len : {3, 6}) {  // q_len > kv_len leaves bottom-right rows empty
      Case c = shaped(ATTNCHECK_F64, 2, 2, 2, q_len, 5, 4, 3, 1);
      c.causal = causal;
      expect_gradients(c, grad_case_for(c), "causal " + std::to_string(causal) + " q_len " + std::to_string(q_len));
    }
}

TEST_F(ExampleV2Backward, ScaleReachesDqAndDk) {
  for (double scale : {0.25, 2.0}) {
    Case c = shaped(ATTNCHECK_F64, 1, 2, 2, 3, 4, 3, 2, 2);
    c.scale = scale;
    expect_gradients(c, grad_case_for(c, 2), "scale " + std::to_string(scale));
  }
}

TEST_F(ExampleV2Backward, GradientViewsAreWrittenThroughTheirStridesAndGapsStayUntouched) {
  Case c = shaped(ATTNCHECK_F64, 2, 3, 3, 4, 5, 3, 2, 3);
  c.q_layout = c.k_layout = c.v_layout = c.out_layout = bshd_padded();
  GradCase g = grad_case_for(c, 3);
  g.dout_layout = g.dq_layout = g.dk_layout = g.dv_layout = bshd_padded();
  expect_gradients(c, g, "bshd");
  // Every tensor in its own axis order, with gaps and lead room.
  c.q_layout = Layout{{1, 0, 2, 3}, {1, 0, 2}, 1};
  c.k_layout = Layout{{2, 1, 0, 3}, {0, 3, 1}, 2};
  c.v_layout = Layout{{0, 1, 2, 3}, {5, 0, 0}, 0};
  c.out_layout = Layout{{2, 0, 1, 3}, {1, 2, 4}, 5};
  g.dout_layout = Layout{{1, 2, 0, 3}, {2, 0, 1}, 3};
  g.dq_layout = Layout{{2, 1, 0, 3}, {1, 1, 1}, 2};
  g.dk_layout = Layout{{0, 2, 1, 3}, {0, 4, 0}, 1};
  g.dv_layout = Layout{{1, 0, 2, 3}, {3, 0, 2}, 4};
  expect_gradients(c, g, "mixed");
}

// dK and dV of a kv head sum over every query head of its group.
TEST_F(ExampleV2Backward, GroupedQueryHeadsSumDkAndDvOverTheGroup) {
  for (int64_t kv_heads : {1, 2, 3}) {
    Case c = shaped(ATTNCHECK_F64, 2, 6, kv_heads, 3, 4, 2, 2, 4);
    expect_gradients(c, grad_case_for(c, 4), "kv_heads " + std::to_string(kv_heads));
  }
}

// Padding rows of dq and padding keys of dk, dv are not written (run_backward_on checks
// every non-live byte); padding of q, k, v, dout is NaN and must not leak.
TEST_F(ExampleV2Backward, LengthsLeavePaddingUntouchedAndUnread) {
  for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_BOTTOM_RIGHT}) {
    Case c = shaped(ATTNCHECK_F64, 4, 2, 1, 4, 5, 3, 2, 5);
    c.q_lens = {4, 2, 0, 3};
    c.kv_lens = {5, 3, 2, 0};  // batch 3 has no keys: its rows are empty
    c.causal = causal;
    c.want_lse = true;
    c.mask.assign(static_cast<size_t>(4 * 2 * 4 * 5), 1);
    c.bias.assign(c.mask.size(), 0.25);
    GradCase g = grad_case_for(c, 5);
    g.dq_layout = g.dk_layout = g.dv_layout = g.dout_layout = bshd_padded();
    expect_gradients(c, g, "causal " + std::to_string(causal));
  }
}

TEST_F(ExampleV2Backward, WindowsAlignToTheDiagonal) {
  for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT, ATTNCHECK_CAUSAL_BOTTOM_RIGHT})
    for (auto [left, right] : {std::pair<int64_t, int64_t>{1, 0}, {0, 2}, {2, -1}, {-1, 1}}) {
      Case c = shaped(ATTNCHECK_F64, 1, 2, 2, 3, 7, 2, 2, 6);
      c.causal = causal;
      c.window_left = left, c.window_right = right;
      expect_gradients(c, grad_case_for(c, 6),
                       "causal " + std::to_string(causal) + " window " + std::to_string(left) + "," + std::to_string(right));
    }
}

// Logits far past the cap: the derivative 1 - tanh^2 is small but not zero; leaving it
// out is off by far more than the tolerance.
TEST_F(ExampleV2Backward, SoftcapDerivativeEntersDqAndDk) {
  for (double softcap : {1.5, 6.0}) {
    Case c = shaped(ATTNCHECK_F64, 1, 2, 2, 3, 4, 3, 2, 7);
    c.scale = 2;
    c.softcap = softcap;
    expect_gradients(c, grad_case_for(c, 7), "softcap " + std::to_string(softcap));
    c.bias.assign(static_cast<size_t>(2 * 3 * 4), 0);
    std::mt19937 rng(seed() + 7);
    for (double& b : c.bias) b = grid(rng, 32, 0.125);
    expect_gradients(c, grad_case_for(c, 7), "softcap " + std::to_string(softcap) + " with bias");
  }
}

TEST_F(ExampleV2Backward, BiasAndMaskBroadcastAndHide) {
  for (int broadcast = 0; broadcast < 8; ++broadcast) {
    Case c = shaped(ATTNCHECK_F64, 2, 2, 2, 3, 4, 2, 2, static_cast<uint32_t>(8 + broadcast));
    const Broadcast br{(broadcast & 1) != 0, (broadcast & 2) != 0, (broadcast & 4) != 0};
    c.bias_broadcast = c.mask_broadcast = br;
    const auto ext = c.stored_extents(br);
    const size_t n = static_cast<size_t>(ext[0] * ext[1] * ext[2] * ext[3]);
    std::mt19937 rng(seed() + 11 + broadcast);
    c.bias.assign(n, 0);
    for (double& b : c.bias) b = std::uniform_int_distribution<int>(0, 4)(rng) == 0 ? -INFINITY : grid(rng, 32, 0.125);
    expect_gradients(c, grad_case_for(c, 8), "bias broadcast " + std::to_string(broadcast));
    c.bias.clear();
    c.mask.assign(n, 0);
    for (uint8_t& m : c.mask) m = static_cast<uint8_t>(std::uniform_int_distribution<int>(0, 2)(rng) * 60);
    expect_gradients(c, grad_case_for(c, 9), "mask broadcast " + std::to_string(broadcast));
  }
}

TEST_F(ExampleV2Backward, AlibiAndSinksEnterThroughTheWeights) {
  for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT}) {
    Case c = shaped(ATTNCHECK_F64, 1, 3, 1, 3, 6, 2, 2, 10);
    c.causal = causal;
    c.alibi_slopes = {0.5f, 0.25f, 0.0625f};
    expect_gradients(c, grad_case_for(c, 10), "alibi causal " + std::to_string(causal));
    c.alibi_slopes.clear();
    c.sinks = {-1.5f, 3.25f, 0.5f};  // 3.25 takes most of the weight of head 1
    c.want_lse = true;
    expect_gradients(c, grad_case_for(c, 11), "sinks causal " + std::to_string(causal));
  }
}

// ---- the rules central differences cannot show ---------------------------------------

// dq of a row that sees no key is exactly 0; dk, dv of a key no row sees are exactly 0
// (not merely small), and the other rows' gradients are unaffected by the empty one.
TEST_F(ExampleV2Backward, EmptyRowsAndUnseenKeysGetExactZeros) {
  for (attncheck_dtype t : kDtypes) {
    // batch 1, heads 2, q_len 3, kv_len 4: row 1 of head 0 sees no key (mask), and key 3
    // is hidden from every row of both heads.
    Case c = shaped(t, 1, 2, 2, 3, 4, 2, 2, 12);
    c.mask.assign(static_cast<size_t>(2 * 3 * 4), 1);
    for (int j = 0; j < 4; ++j) c.mask[static_cast<size_t>(1 * 4 + j)] = 0;
    for (int row = 0; row < 6; ++row) c.mask[static_cast<size_t>(row * 4 + 3)] = 0;
    Gradients got;
    ASSERT_EQ(check_backward(*plugin().v2, c, grad_case_for(c, 12), 0, &got), "") << name_of(t);
    for (int d = 0; d < 2; ++d) EXPECT_EQ(got.dq[static_cast<size_t>(1 * 2 + d)], 0.0) << name_of(t) << " dq " << d;
    for (int h = 0; h < 2; ++h)
      for (int d = 0; d < 2; ++d) {
        const size_t at = static_cast<size_t>((h * 4 + 3) * 2 + d);
        EXPECT_EQ(got.dk[at], 0.0) << name_of(t) << " dk head " << h;
        EXPECT_EQ(got.dv[at], 0.0) << name_of(t) << " dv head " << h;
      }
  }
  // A batch without keys (kv_lens = 0): its rows' dq are 0, and there is no dk or dv.
  Case c = shaped(ATTNCHECK_F32, 2, 1, 1, 2, 3, 2, 2, 13);
  c.kv_lens = {3, 0};
  Gradients got;
  ASSERT_EQ(check_backward(*plugin().v2, c, grad_case_for(c, 13), 0, &got), "");
  for (size_t at = 4; at < 8; ++at) EXPECT_EQ(got.dq[at], 0.0) << at;
}

// out and lse hold the forward's results in a backward call; the backward reads neither
// (it recomputes the weights), so garbage there changes nothing: this is what lets the
// example pass on a checker that hands it another implementation's out.
TEST_F(ExampleV2Backward, OutAndLseAreInputsThatBackwardNeitherWritesNorNeeds) {
  Case c = shaped(ATTNCHECK_F64, 1, 2, 2, 3, 4, 2, 2, 14);
  c.want_lse = true;
  const GradCase g = grad_case_for(c, 14);
  Encoded e;
  encode_call(c, e);
  char err[256] = "";
  ASSERT_EQ(plugin().v2->forward(&e.call, err, sizeof err), ATTNCHECK_OK) << err;
  GradEncoded first, second;
  encode_grad(c, g, first);
  ASSERT_EQ(plugin().v2->backward(&e.call, &first.grad, err, sizeof err), ATTNCHECK_OK) << err;
  std::fill(e.out.bytes.begin(), e.out.bytes.end(), 0x3F);  // 0.49 in every element
  std::fill(e.lse.begin(), e.lse.end(), 1e30f);
  const auto out_garbage = e.out.bytes;
  encode_grad(c, g, second);
  ASSERT_EQ(plugin().v2->backward(&e.call, &second.grad, err, sizeof err), ATTNCHECK_OK) << err;
  EXPECT_EQ(e.out.bytes, out_garbage);
  for (float x : e.lse) EXPECT_EQ(x, 1e30f);
  EXPECT_EQ(first.dq.bytes, second.dq.bytes);
  EXPECT_EQ(first.dk.bytes, second.dk.bytes);
  EXPECT_EQ(first.dv.bytes, second.dv.bytes);
}

// ---- everything together -------------------------------------------------------------

TEST_F(ExampleV2Backward, EveryFeatureTogetherAtRandom) {
  std::mt19937 rng(seed() + 1);
  for (int n = 0; n < 150; ++n) {
    const Case c = random_case(rng, kDtypes);
    GradCase g = grad_case_for(c, static_cast<uint32_t>(rng()));
    g.dout_layout = random_layout(rng), g.dq_layout = random_layout(rng), g.dk_layout = random_layout(rng),
    g.dv_layout = random_layout(rng);
    ASSERT_EQ(check_backward(*plugin().v2, c, g), "") << "random case " << n << " (" << describe(c) << ")";
  }
}

}  // namespace
