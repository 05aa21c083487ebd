// The libtorch adapter's version-2 entry (plugins/torch/torch_attention.cpp), loaded
// with dlopen and called on hand-built v2 calls (v2_test_call.h) for the features it
// declares: strided views with guarded gaps, the mask and the bias through their
// strides (stride 0 broadcasting, -inf hiding), causal rules. It checks the adapter's
// plumbing, not libtorch's accuracy (attncheck's laws do that): the slack admits
// libtorch's own rounding (bf16 scores are kept in bf16), while a misread stride or
// broadcast is off by O(1). Every row sees a key: 1.13's NaN for rows that see none is
// a finding of docs/torch-findings.md, not the adapter's.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "attncheck/plugin_v3.h"
#include "v2_test_plugin.h"

namespace {

using namespace v2test;

constexpr attncheck_dtype kDtypes[] = {ATTNCHECK_F32, ATTNCHECK_F64, ATTNCHECK_BF16};

const LoadedPlugin& plugin() {
  static const LoadedPlugin p(ATTNCHECK_TORCH_PLUGIN);
  return p;
}

double slack(attncheck_dtype t) { return t == ATTNCHECK_F64 ? 1e-12 : t == ATTNCHECK_F32 ? 1e-5 : 5e-2; }

std::string run(const Case& c) {
  Encoded e;
  return run_on(*plugin().v2, c, e, slack(c.dtype));
}

// A stored mask or bias [batch'][heads'][q_len'][kv_len] (1 on broadcast axes) drawn at
// random, key 0 always visible so that no row is empty.
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

Broadcast broadcast_of(int bits) { return Broadcast{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0}; }

class TorchV2 : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugin().handle) << plugin().error;
    ASSERT_TRUE(plugin().v2);
  }
};

TEST_F(TorchV2, DeclaresWhatLibtorchDoesItself) {
  EXPECT_EQ(plugin().v2->abi_version, ATTNCHECK_ABI_VERSION_2);
  EXPECT_EQ(plugin().v2->features,
            ATTNCHECK_FEATURE_MASK | ATTNCHECK_FEATURE_CAUSAL | ATTNCHECK_FEATURE_STRIDES | ATTNCHECK_FEATURE_BIAS);
  EXPECT_NE(plugin().v2->backward, nullptr);  // libtorch's autograd: torch_v2_backward_test
}

TEST_F(TorchV2, StridedViewsAreReadThroughTheirStridesAndGapsStayUntouched) {
  for (attncheck_dtype t : kDtypes)
    for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT, ATTNCHECK_CAUSAL_BOTTOM_RIGHT}) {
      Case c = shaped(t, 2, 3, 3, 4, 5, 3, 2);
      c.causal = causal;
      c.q_layout = c.k_layout = c.v_layout = c.out_layout = bshd_padded();
      EXPECT_EQ(run(c), "") << name_of(t) << " bshd, causal " << causal;
      c.q_layout = Layout{{1, 0, 2, 3}, {1, 0, 2}, 1};
      c.k_layout = Layout{{2, 1, 0, 3}, {0, 3, 1}, 2};
      c.v_layout = Layout{{0, 1, 2, 3}, {5, 0, 0}, 0};
      c.out_layout = Layout{{2, 0, 1, 3}, {1, 2, 4}, 5};
      c.scale = 0.75;
      EXPECT_EQ(run(c), "") << name_of(t) << " mixed, causal " << causal;
    }
}

TEST_F(TorchV2, MaskAndBiasAreReadThroughTheirStrides) {
  for (attncheck_dtype t : kDtypes)
    for (int mask_bits = -1; mask_bits < 8; ++mask_bits)      // -1: no mask
      for (int bias_bits = -1; bias_bits < 8; bias_bits += 3) {  // -1: no bias
        for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT}) {
          Case c = shaped(t, 2, 2, 2, 3, 4, 2, 3, static_cast<uint32_t>(mask_bits * 8 + bias_bits));
          std::mt19937 rng(seed() + static_cast<uint32_t>(100 + mask_bits * 8 + bias_bits));
          c.causal = causal;
          c.out_layout = bshd_padded();
          if (mask_bits >= 0) {
            c.mask_broadcast = broadcast_of(mask_bits);
            draw_mask(c, rng);
          }
          if (bias_bits >= 0) {
            c.bias_broadcast = broadcast_of(bias_bits);
            draw_bias(c, rng);
          }
          EXPECT_EQ(run(c), "") << name_of(t) << " mask " << mask_bits << " bias " << bias_bits << " causal " << causal;
        }
      }
}

TEST_F(TorchV2, UndeclaredFeaturesAndF16AreUnsupported) {
  Case gqa = shaped(ATTNCHECK_F32, 1, 2, 1, 2, 2, 2, 2);
  Encoded e;
  encode_call(gqa, e);
  char err[256] = "";
  EXPECT_EQ(plugin().v2->forward(&e.call, err, sizeof err), ATTNCHECK_UNSUPPORTED);
  EXPECT_NE(std::string(err).find("GQA"), std::string::npos) << err;
  Case f16 = shaped(ATTNCHECK_F16, 1, 1, 1, 2, 2, 2, 2);
  encode_call(f16, e);
  EXPECT_EQ(plugin().v2->forward(&e.call, err, sizeof err), ATTNCHECK_UNSUPPORTED) << err;
}

// The v1 entry is the same computation on the dense call: bit for bit.
TEST_F(TorchV2, TheV1EntryGivesTheDenseV2Answer) {
  ASSERT_TRUE(plugin().v1);
  for (attncheck_dtype t : kDtypes)
    for (attncheck_causal causal : {ATTNCHECK_CAUSAL_NONE, ATTNCHECK_CAUSAL_TOP_LEFT, ATTNCHECK_CAUSAL_BOTTOM_RIGHT}) {
      Case c = shaped(t, 2, 2, 2, 3, 4, 3, 2);
      c.causal = causal;
      c.mask.assign(static_cast<size_t>(2 * 2 * 3 * 4), 1);
      c.mask[5] = c.mask[7] = 0;
      Encoded e;
      ASSERT_EQ(run_on(*plugin().v2, c, e, slack(t)), "");
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

// Version 3 (docs/torch-findings.md, "ABI version 3"): version 2's features and
// nothing of version 3's (1.13 has no varlen, paged or fp8 attention on CPU), the two
// determinism promises (measured), not batch invariance (measured failing).
const attncheck_impl_v3* torch_v3() {
  using Entry = const attncheck_impl_v3* (*)();
  const auto entry = reinterpret_cast<Entry>(dlsym(plugin().handle, "attncheck_plugin_v3"));
  return entry ? entry() : nullptr;
}

TEST_F(TorchV2, Version3DeclaresTheDeterminismPromisesAndNoV3Feature) {
  const attncheck_impl_v3* v3 = torch_v3();
  ASSERT_NE(v3, nullptr);
  EXPECT_EQ(v3->abi_version, ATTNCHECK_ABI_VERSION_3);
  EXPECT_EQ(v3->features, plugin().v2->features);
  EXPECT_EQ(v3->kv_formats, 0u);
  EXPECT_EQ(v3->numerics, 0u);
  EXPECT_EQ(v3->promises, ATTNCHECK_PROMISE_DETERMINISTIC | ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD);
  EXPECT_NE(v3->backward, nullptr);
  EXPECT_STREQ(v3->name, plugin().v2->name);
}

// The v3 entry on a call whose added fields are neutral is the v2 computation; a
// call with a version-3 field in use is refused by name, never computed as padded.
const attncheck_impl_v3* g_v3_under_test = nullptr;
int v3_entry_on_v2_call(const attncheck_call_v2* c, char* err, size_t n) {
  attncheck_call_v3 c3{};
  c3.v2 = *c;
  return g_v3_under_test->forward(&c3, err, n);
}

TEST_F(TorchV2, TheV3EntryComputesNeutralCallsAndRefusesTheRest) {
  g_v3_under_test = torch_v3();
  ASSERT_NE(g_v3_under_test, nullptr);
  attncheck_impl_v2 through_v3 = *plugin().v2;
  through_v3.forward = v3_entry_on_v2_call;
  for (attncheck_dtype t : kDtypes) {
    Case c = shaped(t, 2, 2, 2, 3, 4, 3, 2);
    c.causal = ATTNCHECK_CAUSAL_BOTTOM_RIGHT;
    Encoded e;
    EXPECT_EQ(run_on(through_v3, c, e, slack(t)), "") << name_of(t);
  }
  const int32_t cu[2] = {0, 3};
  attncheck_call_v3 packed{};
  packed.cu_seqlens_q = cu;
  packed.total_q = 3;
  char err[256] = "";
  EXPECT_EQ(g_v3_under_test->forward(&packed, err, sizeof err), 2);
  EXPECT_NE(std::string(err).find("cu_seqlens_q/k, total_q/k (PACKED) is not neutral"), std::string::npos) << err;
  attncheck_call_v3 q8{};
  q8.k_format = ATTNCHECK_KV_Q8_0;
  EXPECT_EQ(g_v3_under_test->forward(&q8, err, sizeof err), 2);
  EXPECT_NE(std::string(err).find("KV_FORMATS"), std::string::npos) << err;
}

}  // namespace
