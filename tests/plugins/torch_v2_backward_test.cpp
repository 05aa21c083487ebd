// The libtorch adapter's version-2 backward (plugins/torch/torch_backward.cpp), loaded
// with dlopen and called on hand-built calls (v2_grad_test_plugin.h) for the features
// it declares: its dq, dk, dv against central differences of its own forward in f64,
// through strided views of every tensor (gaps guarded), the mask and the bias through
// their strides, causal rules, a requested scale (folded into q or k). It checks the
// adapter's plumbing of libtorch's autograd, not libtorch's accuracy (the gradient laws
// do that): the slack admits libtorch's rounding in the dtype (bf16 is computed in bf16
// throughout), while a misread stride is off by O(1). Every row sees a key, except in
// RowsThatSeeNoKey..., which records what 1.13 does there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "v2_grad_test_plugin.h"

namespace {

using namespace v2test;

constexpr attncheck_dtype kDtypes[] = {ATTNCHECK_F32, ATTNCHECK_F64, ATTNCHECK_BF16};

const LoadedPlugin& plugin() {
  static const LoadedPlugin p(ATTNCHECK_TORCH_PLUGIN);
  return p;
}

// Relative to 1 + |gradient|; measured worst ratios are in each test's output.
double slack(attncheck_dtype t) { return t == ATTNCHECK_F64 ? 0 : t == ATTNCHECK_F32 ? 1e-5 : 5e-2; }

// The worst |got - want| / (1 + |want|) over the live elements.
double worst_relative(const Gradients& got, const Gradients& want) {
  double worst = 0;
  for (auto [g, w] : {std::pair{&got.dq, &want.dq}, {&got.dk, &want.dk}, {&got.dv, &want.dv}})
    for (size_t at = 0; at < w->size(); ++at)
      if (!std::isnan((*w)[at])) worst = std::max(worst, std::fabs((*g)[at] - (*w)[at]) / (1 + std::fabs((*w)[at])));
  return worst;
}

// Checks one case in every dtype, printing the worst relative difference per dtype.
void expect_gradients(const Case& shape, const GradCase& g, const std::string& what) {
  for (attncheck_dtype t : kDtypes) {
    Case c = shape;
    c.dtype = t;
    const Gradients want = central_differences(*plugin().v2, c, g.dout);
    Gradients got;
    EXPECT_EQ(run_backward_on(*plugin().v2, c, g, want, slack(t), &got), "") << name_of(t) << " " << what;
    std::printf("%s %s: worst |got - want| / (1 + |want|) = %.3g\n", what.c_str(), name_of(t).c_str(),
                worst_relative(got, want));
  }
}

// A stored mask or bias drawn at random, key 0 always visible so that no row is empty
// (as in torch_v2_adapter_test).
void draw_mask(Case& c, std::mt19937& rng) {
  const auto ext = c.stored_extents(c.mask_broadcast);
  c.mask.assign(static_cast<size_t>(ext[0] * ext[1] * ext[2] * ext[3]), 1);
  for (size_t at = 0; at < c.mask.size(); ++at)
    if (at % ext[3] != 0) c.mask[at] = static_cast<uint8_t>(std::uniform_int_distribution<int>(0, 2)(rng) != 0);
}
void draw_bias(Case& c, std::mt19937& rng) {
  const auto ext = c.stored_extents(c.bias_broadcast);
  c.bias.assign(static_cast<size_t>(ext[0] * ext[1] * ext[2] * ext[3]), 0);
  for (size_t at = 0; at < c.bias.size(); ++at)
    c.bias[at] = at % ext[3] != 0 && std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? -INFINITY : grid(rng, 16, 0.125);
}

class TorchV2Backward : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugin().handle) << plugin().error;
    ASSERT_TRUE(plugin().v2);
    ASSERT_NE(plugin().v2->backward, nullptr);
  }
};

TEST_F(TorchV2Backward, DenseGradientsMatchCentralDifferencesOfItsOwnForward) {
  for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT, ATTNCHECK_CAUSAL_BOTTOM_RIGHT})
    for (double scale : {static_cast<double>(NAN), 0.75}) {
      // q_len <= kv_len: every row sees a key under each causal rule.
      Case c = shaped(ATTNCHECK_F64, 2, 2, 2, 3, 4, 3, 2, 1);
      c.causal = causal;
      c.scale = scale;
      expect_gradients(c, grad_case_for(c), "dense causal " + std::to_string(causal) + " scale " + std::to_string(scale));
    }
}

TEST_F(TorchV2Backward, StridedGradientViewsAreWrittenThroughTheirStridesAndGapsStayUntouched) {
  for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT}) {
    Case c = shaped(ATTNCHECK_F64, 2, 3, 3, 4, 5, 3, 2, 2);
    c.causal = causal;
    c.q_layout = c.k_layout = c.v_layout = c.out_layout = bshd_padded();
    GradCase g = grad_case_for(c, 2);
    g.dout_layout = g.dq_layout = g.dk_layout = g.dv_layout = bshd_padded();
    expect_gradients(c, g, "bshd causal " + std::to_string(causal));
    // Every tensor in its own axis order, with gaps and lead room.
    c.q_layout = Layout{{1, 0, 2, 3}, {1, 0, 2}, 1};
    c.k_layout = Layout{{2, 1, 0, 3}, {0, 3, 1}, 2};
    c.v_layout = Layout{{0, 1, 2, 3}, {5, 0, 0}, 0};
    c.out_layout = Layout{{2, 0, 1, 3}, {1, 2, 4}, 5};
    g.dout_layout = Layout{{1, 2, 0, 3}, {2, 0, 1}, 3};
    g.dq_layout = Layout{{2, 1, 0, 3}, {1, 1, 1}, 2};
    g.dk_layout = Layout{{0, 2, 1, 3}, {0, 4, 0}, 1};
    g.dv_layout = Layout{{1, 0, 2, 3}, {3, 0, 2}, 4};
    c.scale = 1.25;
    expect_gradients(c, g, "mixed causal " + std::to_string(causal));
  }
}

TEST_F(TorchV2Backward, MaskAndBiasEnterTheGradientsThroughTheirStrides) {
  for (int mask_bits = -1; mask_bits < 8; mask_bits += 3)    // -1: no mask
    for (int bias_bits = -1; bias_bits < 8; bias_bits += 4)  // -1: no bias
      for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT}) {
        Case c = shaped(ATTNCHECK_F64, 2, 2, 2, 3, 4, 2, 3, static_cast<uint32_t>(40 + mask_bits * 8 + bias_bits));
        std::mt19937 rng(seed() + static_cast<uint32_t>(200 + mask_bits * 8 + bias_bits));
        c.causal = causal;
        if (mask_bits >= 0) {
          c.mask_broadcast = Broadcast{(mask_bits & 1) != 0, (mask_bits & 2) != 0, (mask_bits & 4) != 0};
          draw_mask(c, rng);
        }
        if (bias_bits >= 0) {
          c.bias_broadcast = Broadcast{(bias_bits & 1) != 0, (bias_bits & 2) != 0, (bias_bits & 4) != 0};
          draw_bias(c, rng);
        }
        GradCase g = grad_case_for(c, static_cast<uint32_t>(mask_bits * 8 + bias_bits + 100));
        g.dq_layout = g.dv_layout = bshd_padded();
        expect_gradients(c, g,
                         "mask " + std::to_string(mask_bits) + " bias " + std::to_string(bias_bits) + " causal " +
                             std::to_string(causal));
      }
}

// Scale 0 folds q' = 0 * q, and the chain rule multiplies libtorch's dS @ K by 0: NaN
// where that product overflows (k of 2e37 in bf16), where the exact dq is 0. Forward
// takes scale 0 (q' = 0 is exact); backward answers UNSUPPORTED for it.
TEST_F(TorchV2Backward, ScaleZeroIsUnsupportedForGradients) {
  Case c = shaped(ATTNCHECK_BF16, 1, 1, 1, 1, 2, 1, 1);
  c.scale = 0;
  c.q = {0};
  c.k = {0, std::ldexp(1.0, 124)};  // 2.1e37
  c.v = {0, 1};
  Encoded e;
  encode_call(c, e);
  char err[256] = "";
  ASSERT_EQ(plugin().v2->forward(&e.call, err, sizeof err), ATTNCHECK_OK) << err;
  EXPECT_EQ(decode(ATTNCHECK_BF16, e.out.at(0, 0, 0, 0)), 0.5);  // uniform weights
  GradCase g = grad_case_for(c);
  g.dout = {64};
  GradEncoded ge;
  encode_grad(c, g, ge);
  EXPECT_EQ(plugin().v2->backward(&e.call, &ge.grad, err, sizeof err), ATTNCHECK_UNSUPPORTED);
  EXPECT_NE(std::string(err).find("scale 0"), std::string::npos) << err;
}

TEST_F(TorchV2Backward, F16IsUnsupportedAsInForward) {
  Case c = shaped(ATTNCHECK_F16, 1, 1, 1, 2, 2, 2, 2);
  Encoded e;
  encode_call(c, e);
  GradEncoded ge;
  encode_grad(c, grad_case_for(c), ge);
  char err[256] = "";
  EXPECT_EQ(plugin().v2->backward(&e.call, &ge.grad, err, sizeof err), ATTNCHECK_UNSUPPORTED);
  EXPECT_NE(std::string(err).find("f16"), std::string::npos) << err;
}

// What libtorch 1.13 does for a row that sees no key, pinned so that a change (a new
// libtorch, or an adapter that started repairing it) is seen: the spec asks dq = 0 for
// that row and leaves dk, dv of the head as the other rows make them, but 1.13's
// forward is 0/0 = NaN there and its backward spreads the NaN: dq of the row, and dk
// and dv of EVERY key of that batch and head (the row's NaN weights enter P^T dO and
// dS^T Q), even where dout of the row is 0. The other rows' dq and the other heads stay
// right. The gradient laws report it (docs/torch-findings.md).
TEST_F(TorchV2Backward, RowsThatSeeNoKeyMakeTheirHeadsDkAndDvNaN) {
  for (attncheck_dtype t : kDtypes)
    for (bool zero_dout : {false, true}) {
      // batch 1, heads 2, q_len 3, kv_len 4; row 1 of head 0 sees no key (mask).
      Case c = shaped(t, 1, 2, 2, 3, 4, 2, 2, 9);
      c.mask.assign(static_cast<size_t>(2 * 3 * 4), 1);
      for (int j = 0; j < 4; ++j) c.mask[static_cast<size_t>(1 * 4 + j)] = 0;
      GradCase g = grad_case_for(c, 9);
      if (zero_dout)
        for (int col = 0; col < 2; ++col) g.dout[static_cast<size_t>(1 * 2 + col)] = 0;
      Encoded e;
      encode_call(c, e);
      char err[256] = "";
      ASSERT_EQ(plugin().v2->forward(&e.call, err, sizeof err), ATTNCHECK_OK) << err;
      EXPECT_TRUE(std::isnan(decode(t, e.out.at(0, 0, 1, 0)))) << "1.13's forward on a row that sees no key";
      GradEncoded ge;
      encode_grad(c, g, ge);
      ASSERT_EQ(plugin().v2->backward(&e.call, &ge.grad, err, sizeof err), ATTNCHECK_OK) << err;
      const Gradients got = decode_gradients(c, ge);
      // dq [1][2][3][2], dk and dv [1][2][4][2].
      for (size_t at = 0; at < got.dq.size(); ++at) {
        const bool empty_row = at / 2 == 1;  // head 0, row 1
        EXPECT_EQ(std::isnan(got.dq[at]), empty_row) << name_of(t) << " dq element " << at;
      }
      for (size_t at = 0; at < got.dk.size(); ++at) {
        const bool head0 = at < 4 * 2;
        EXPECT_EQ(std::isnan(got.dk[at]), head0) << name_of(t) << " dk element " << at;
        EXPECT_EQ(std::isnan(got.dv[at]), head0) << name_of(t) << " dv element " << at;
      }
    }
}

}  // namespace
