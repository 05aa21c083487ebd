// The plugin host loads and calls ABI version 3 (docs/abi/plugin-abi-v3.md;
// src/host/): attncheck_plugin_v3 is resolved before v2 and v1 (the highest
// version present), its forward and backward get an attncheck_call_v3 whose
// `v2` is today's v2 call and whose added fields are all neutral (the test
// plugin answers error 9 naming a field that is not), a declaration the spec
// refuses is refused with the field and its value, and what a v3 plugin
// declares beyond version 2 is named as not judged. The plugins are variants
// of tests/plugins/v3_echo_plugin.c (tests/plugins/v3_plugins.cmake).
#include <gtest/gtest.h>

#include <cmath>

#include "attncheck/plugin_v3.h"
#include "host/call_wire.h"
#include "host/plugin_host.h"
#include "test_plugin_load.h"
#include "host/v3_declaration.h"
#include "problem/problem.h"


namespace attncheck {
namespace {

std::string v3_plugin(const std::string& name) { return test::test_plugin_path("v3", name); }
std::unique_ptr<Implementation> load(const std::string& name) { return test::load_test_plugin("v3", name); }
std::string refusal(const std::string& name) { return test::test_plugin_refusal("v3", name); }

// batch 2, heads 4 over 2 kv heads, q_len 5, kv_len 3, dims 3; q holds 1, 2, 3, ...;
// strided q and out, lengths, lse, window, softcap, ALiBi, sinks, a broadcast bias and mask.
Problem strided_problem(DType t) {
  Shape s{2, 4, 5, 3, 3, 3};
  s.kv_heads = 2;
  Problem p = make_problem(t, s, Causal::bottom_right);
  for (std::size_t i = 0; i < p.q.size(); ++i) p.q[i] = static_cast<double>(i + 1);
  p.layouts.q = TensorLayout{{0, 2, 1}, {0, 3, 1}};
  p.layouts.out = TensorLayout{{0, 2, 1}, {5, 2, 1}};
  p.q_lens = {5, 2};
  p.kv_lens = {3, 1};
  p.lse_requested = true;
  p.window_left = 1;
  p.softcap = 30;
  p.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  p.sinks = {0, 1, -1, 2};
  p.bias.assign(static_cast<std::size_t>(s.kv_len), 0.5);
  p.bias_broadcast = Broadcast{false, false, false};
  p.mask.assign(static_cast<std::size_t>(s.heads * s.kv_len), 1);
  p.mask_broadcast = Broadcast{false, true, false};
  return p;
}

// The echo: out = q and lse = i + 0.5 on live rows, zeros (guards) elsewhere.
void expect_echo(const Problem& p, const Outcome& o) {
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
    for (int64_t i = 0; i < p.shape.q_len; ++i) {
      const bool live = p.row_exists(bh, i);
      EXPECT_EQ(o.lse[bh * p.shape.q_len + i], live ? i + 0.5 : 0.0) << "bh " << bh << " i " << i;
      for (int64_t c = 0; c < p.shape.value_dim; ++c)
        EXPECT_EQ(o.out[p.out_at(bh, i, c)], live ? p.q[p.q_at(bh, i, c)] : 0.0) << "bh " << bh << " i " << i;
    }
}

TEST(PluginHostV3, AV3PluginIsCalledThroughV3WithNeutralAddedFields) {
  for (DType t : {DType::f32, DType::f64}) {
    auto impl = load("echo");
    ASSERT_TRUE(impl);
    EXPECT_EQ(impl->name(), "v3-echo");
    EXPECT_EQ(impl->features(), kAllFeatures);
    EXPECT_TRUE(impl->declared_not_judged().empty());
    const Problem p = strided_problem(t);
    ASSERT_EQ(p.inconsistency(), "");
    ASSERT_EQ(p.features(), kAllFeatures) << feature_list(p.features());
    expect_echo(p, impl->run(p));
  }
}

// v1 and v2 entries that answer error 7: a call through either would fail.
TEST(PluginHostV3, V3IsPreferredOverV2AndV1) {
  auto impl = load("echo_with_lower");
  ASSERT_TRUE(impl);
  EXPECT_EQ(impl->name(), "v3-echo");
  expect_echo(strided_problem(DType::f32), impl->run(strided_problem(DType::f32)));
}

TEST(PluginHostV3, BackwardIsCalledThroughV3) {
  auto impl = load("echo_backward");
  ASSERT_TRUE(impl);
  EXPECT_EQ(impl->features(), kAllFeatures | kBackwardFeature);
  Shape s{2, 4, 3, 4, 2, 2};
  s.kv_heads = 2;
  Problem p = make_problem(DType::f32, s);
  for (std::size_t i = 0; i < p.q.size(); ++i) p.q[i] = static_cast<double>(i + 1);
  p.dout.resize(static_cast<std::size_t>(s.out_size()));
  for (std::size_t i = 0; i < p.dout.size(); ++i) p.dout[i] = 0.5 * static_cast<double>(i + 1);
  p.kv_lens = {4, 2};
  p.layouts.dq = TensorLayout{{0, 1, 2}, {0, 0, 1}};
  ASSERT_EQ(p.inconsistency(), "");
  const Outcome o = impl->run(p);
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  ASSERT_EQ(o.dq.size(), static_cast<std::size_t>(s.q_size()));
  for (std::size_t i = 0; i < o.dq.size(); ++i) EXPECT_EQ(o.dq[i], p.dout[i]) << i;  // dq = dout, dense extents
  for (int64_t kv_bh = 0; kv_bh < s.batch * s.kv_head_count(); ++kv_bh)
    for (int64_t j = 0; j < s.kv_len; ++j) {
      const bool live = j < p.kv_len_of(kv_bh / s.kv_head_count());
      EXPECT_EQ(std::isnan(o.dk[p.k_at(kv_bh, j, 0)]), !live) << "kv_bh " << kv_bh << " j " << j;
      if (live) {
        EXPECT_EQ(o.dv[p.v_at(kv_bh, j, 1)], 0.0);
      }
    }
}

TEST(PluginHostV3, DeclarationsBeyondV2AreLoadedAndNamedAsNotJudged) {
  auto impl = load("echo_declares_v3");
  ASSERT_TRUE(impl);
  // Version 2's bits, PACKED, PAGED, KV_FORMATS, ALIBI_BATCH and BROADCAST_KV
  // (judged by the packed and paged laws, quantized_matches_oracle,
  // alibi_batch_matches_alone, broadcast_equals_materialized) reach the laws,
  // with the formats offered; bit 16 (BROADCAST_KV) reads as
  // kBroadcastKvFeature, never as kBackwardFeature.
  EXPECT_EQ(impl->features(),
            kAllFeatures | kPackedFeature | kPagedFeature | kKvFormatsFeature | kAlibiBatchFeature | kBroadcastKvFeature);
  EXPECT_EQ(impl->kv_formats(), (1u << ATTNCHECK_KV_INT4) | (1u << ATTNCHECK_KV_Q8_0) | (1u << ATTNCHECK_KV_Q4_0));
  // Q_AS_Q8_0 is judged (the bound widens by it); KV_PRECISION is not yet. Both reach the
  // generator (Implementation::numerics), which sets the bits that apply to each call.
  EXPECT_EQ(impl->numerics(), ATTNCHECK_NUMERICS_Q_AS_Q8_0 | ATTNCHECK_NUMERICS_KV_PRECISION);
  const std::vector<std::string> want = {"numerics kv_precision"};
  EXPECT_EQ(impl->declared_not_judged(), want);
  // Its promises (DETERMINISTIC | BATCH_INVARIANT) reach the laws, which judge them: not named above.
  EXPECT_EQ(impl->promises(), ATTNCHECK_PROMISE_DETERMINISTIC | ATTNCHECK_PROMISE_BATCH_INVARIANT);
  expect_echo(strided_problem(DType::f32), impl->run(strided_problem(DType::f32)));
}

// Implementation::shift_buffers: the call's layout starts further into the
// shared region, and every pointer the child builds from the wire moves with
// it (the echo reads q and writes out and lse through them); a v2-only
// declaration promises nothing.
TEST(PluginHostV3, ShiftedBuffersReachTheChild) {
  auto impl = load("echo");
  ASSERT_TRUE(impl);
  EXPECT_EQ(impl->promises(), 0u);
  const Problem p = strided_problem(DType::f32);
  for (std::size_t shift : {std::size_t{64}, std::size_t{4160}, std::size_t{8128}, std::size_t{0}}) {
    ASSERT_TRUE(impl->shift_buffers(shift));
    expect_echo(p, impl->run(p));
  }
  EXPECT_FALSE(impl->shift_buffers(32));  // not a multiple of the alignment
  // The child sees out `shift` bytes further (the address echoed in lse).
  auto where = load("echo_address");
  ASSERT_TRUE(where);
  const Outcome at0 = where->run(p);
  ASSERT_TRUE(where->shift_buffers(4160));
  const Outcome moved = where->run(p);
  ASSERT_EQ(at0.status, CallStatus::ok) << at0.message;
  ASSERT_EQ(moved.status, CallStatus::ok) << moved.message;
  EXPECT_EQ(std::fmod(moved.lse[0] - at0.lse[0] + 65536, 65536), 4160.0);
  // A backward call moved: the same gradients (dq = dout), its guards checked where they moved.
  auto backward = load("echo_backward");
  ASSERT_TRUE(backward);
  Shape s{2, 4, 3, 4, 2, 2};
  s.kv_heads = 2;
  Problem b = make_problem(DType::f32, s);
  for (std::size_t i = 0; i < b.q.size(); ++i) b.q[i] = static_cast<double>(i + 1);
  b.dout.assign(static_cast<std::size_t>(s.out_size()), 0.5);
  const Outcome in_place = backward->run(b);
  ASSERT_TRUE(backward->shift_buffers(4160));
  const Outcome shifted = backward->run(b);
  ASSERT_EQ(shifted.status, CallStatus::ok) << shifted.message;
  EXPECT_EQ(shifted.dq, in_place.dq);
  EXPECT_EQ(shifted.dq, b.dout);
}

TEST(PluginHostV3, BrokenV3ExportsAreRefusedNamingTheFieldAndValue) {
  const std::pair<const char*, const char*> cases[] = {
      {"echo_wrong_abi",
       "it reports plugin ABI version 2 from attncheck_plugin_v3(), which must report version 3 (rebuild it against "
       "this attncheck's attncheck/plugin_v3.h)"},
      {"echo_null_forward", "the implementation attncheck_plugin_v3() returns has a NULL forward function"},
      {"echo_unknown_feature",
       "attncheck_plugin_v3() declares features 0x207ff, whose bits 0x20000 no ATTNCHECK_FEATURE_* of ABI version 3 "
       "names"},
      {"echo_alibi_batch_alone",
       "declares features 0x4000: ATTNCHECK_FEATURE_ALIBI_BATCH without ATTNCHECK_FEATURE_ALIBI"},
      {"echo_unknown_format", "declares kv_formats 0x281, whose bits 0x200 no attncheck_kv_format names"},
      {"echo_formats_dtype_only",
       "declares ATTNCHECK_FEATURE_KV_FORMATS with kv_formats 0x1, which offers no format other than "
       "ATTNCHECK_KV_DTYPE"},
      {"echo_formats_without_feature",
       "declares kv_formats 0x80 without ATTNCHECK_FEATURE_KV_FORMATS in features 0x7ff"},
      {"echo_unknown_numerics", "declares numerics 0x4, whose bits 0x4 no ATTNCHECK_NUMERICS_* names"},
      {"echo_q8_without_blocks",
       "declares numerics 0x1 with ATTNCHECK_NUMERICS_Q_AS_Q8_0, which applies only to calls with K in Q8_0 or "
       "Q4_0, and kv_formats 0x20 offers neither"},
      {"echo_precision_without_16bit",
       "declares numerics 0x2 with ATTNCHECK_NUMERICS_KV_PRECISION, which applies only to calls with K or V in "
       "F16, BF16, Q8_0 or Q4_0, and kv_formats 0x8 offers none of them"},
      {"echo_unknown_promise", "declares promises 0x8, whose bits 0x8 no ATTNCHECK_PROMISE_* names"},
      {"echo_det_backward_without_backward",
       "declares promises 0x2 with ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD, and its backward is NULL"},
  };
  for (const auto& [name, words] : cases) {
    const std::string e = refusal(name);
    EXPECT_EQ(e.rfind("cannot load plugin " + v3_plugin(name) + ": ", 0), 0u) << e;
    EXPECT_NE(e.find(words), std::string::npos) << name << ": " << e;
  }
}

// The wire carries every field version 3 adds, not only the neutral values this
// slice sends: pointers rebased onto the child's mapping, scalars, formats and
// scales' strides bit for bit (the later slices fill them).
TEST(CallWireV3, EveryAddedFieldTravels) {
  std::vector<uint8_t> region(4096), child(4096);
  auto at = [&](std::size_t off) { return region.data() + off; };
  attncheck_call_v3 c = host::neutral_call_v3(attncheck_call_v2{});
  c.v2.batch = 3;
  c.v2.q.data = at(64);
  c.v2.q.stride[2] = 7;
  c.cu_seqlens_q = reinterpret_cast<const int32_t*>(at(128));
  c.cu_seqlens_k = reinterpret_cast<const int32_t*>(at(192));
  c.total_q = 11;
  c.total_k = 12;
  c.block_table = reinterpret_cast<const int32_t*>(at(256));
  c.max_pages_per_seq = 13;
  c.num_pages = int64_t{1} << 40;
  c.page_size = 256;
  c.k_format = ATTNCHECK_KV_Q4_0;
  c.v_format = ATTNCHECK_KV_FP8_E5M2;
  c.k_scale = attncheck_scale{reinterpret_cast<const float*>(at(320)), {5, 1, 0}};
  c.v_scale = attncheck_scale{reinterpret_cast<const float*>(at(384)), {0, 2, 1}};
  c.alibi_batch_stride = 17;
  const attncheck_call_v3 t = host::from_wire(host::to_wire(c, region.data()), child.data());
  auto moved = [&](const void* p, const void* q) {
    return static_cast<const uint8_t*>(p) - child.data() == static_cast<const uint8_t*>(q) - region.data();
  };
  EXPECT_EQ(t.v2.batch, 3);
  EXPECT_TRUE(moved(t.v2.q.data, c.v2.q.data));
  EXPECT_EQ(t.v2.q.stride[2], 7);
  EXPECT_TRUE(moved(t.cu_seqlens_q, c.cu_seqlens_q));
  EXPECT_TRUE(moved(t.cu_seqlens_k, c.cu_seqlens_k));
  EXPECT_EQ(t.total_q, 11);
  EXPECT_EQ(t.total_k, 12);
  EXPECT_TRUE(moved(t.block_table, c.block_table));
  EXPECT_EQ(t.max_pages_per_seq, 13);
  EXPECT_EQ(t.num_pages, int64_t{1} << 40);
  EXPECT_EQ(t.page_size, 256);
  EXPECT_EQ(t.k_format, ATTNCHECK_KV_Q4_0);
  EXPECT_EQ(t.v_format, ATTNCHECK_KV_FP8_E5M2);
  EXPECT_TRUE(moved(t.k_scale.data, c.k_scale.data));
  EXPECT_TRUE(moved(t.v_scale.data, c.v_scale.data));
  EXPECT_EQ(std::vector<int64_t>(t.k_scale.stride, t.k_scale.stride + 3), (std::vector<int64_t>{5, 1, 0}));
  EXPECT_EQ(std::vector<int64_t>(t.v_scale.stride, t.v_scale.stride + 3), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(t.alibi_batch_stride, 17);
  // The neutral call: NULL stays NULL, not the child's base address.
  const attncheck_call_v3 n = host::from_wire(host::to_wire(host::neutral_call_v3(c.v2), region.data()), child.data());
  EXPECT_EQ(n.cu_seqlens_q, nullptr);
  EXPECT_EQ(n.block_table, nullptr);
  EXPECT_EQ(n.k_scale.data, nullptr);
  EXPECT_EQ(n.k_format, ATTNCHECK_KV_DTYPE);
  EXPECT_EQ(n.page_size, 0);
}

// The rules on their own, at the edges the plugins above do not reach.
TEST(V3Declaration, AcceptsWhatTheSpecAllows) {
  EXPECT_EQ(v3_declaration_refusal({}), "");
  EXPECT_EQ(v3_declaration_refusal({.features = kV3FeatureBits, .kv_formats = kV3KvFormatBits,
                                    .numerics = kV3NumericsBits, .promises = kV3PromiseBits, .has_backward = true}),
            "");
  // DTYPE alone (bit 0) is implied, harmless without KV_FORMATS.
  EXPECT_EQ(v3_declaration_refusal({.kv_formats = 1}), "");
  // KV_PRECISION applies to a bf16 cache; Q_AS_Q8_0 to a q4_0 one.
  EXPECT_EQ(v3_declaration_refusal({.features = ATTNCHECK_FEATURE_KV_FORMATS, .kv_formats = 1u << ATTNCHECK_KV_BF16,
                                    .numerics = ATTNCHECK_NUMERICS_KV_PRECISION}),
            "");
  EXPECT_EQ(v3_declaration_refusal({.features = ATTNCHECK_FEATURE_KV_FORMATS, .kv_formats = 1u << ATTNCHECK_KV_Q4_0,
                                    .numerics = ATTNCHECK_NUMERICS_Q_AS_Q8_0}),
            "");
  EXPECT_EQ(v3_declaration_refusal({.promises = ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD, .has_backward = true}), "");
}

TEST(V3Declaration, NumericsNeedAFormatThatKVFormatsOffers) {
  // A format bit without KV_FORMATS is refused first; a numerics bit needs the feature too.
  EXPECT_NE(v3_declaration_refusal({.numerics = ATTNCHECK_NUMERICS_Q_AS_Q8_0}), "");
  EXPECT_NE(v3_declaration_refusal({.features = ATTNCHECK_FEATURE_KV_FORMATS, .kv_formats = 1u << ATTNCHECK_KV_Q8_0,
                                    .numerics = ATTNCHECK_NUMERICS_KV_PRECISION | 4u}),
            "");
  EXPECT_EQ(v3_declaration_refusal({.features = ATTNCHECK_FEATURE_KV_FORMATS, .kv_formats = 1u << ATTNCHECK_KV_Q8_0,
                                    .numerics = ATTNCHECK_NUMERICS_KV_PRECISION}),
            "");
}

TEST(V3Declaration, VersionTwoFeaturesAloneAreAllJudged) {
  EXPECT_TRUE(v3_declarations_not_judged({.features = kAllFeatures, .has_backward = true}).empty());
  // The promises are judged by the promise laws: never named.
  // V_VIEW_OF_K is judged (mla_matches_oracle, v_view_equals_copy): never named.
  EXPECT_TRUE(v3_declarations_not_judged({.features = ATTNCHECK_FEATURE_V_VIEW_OF_K, .promises = 7, .has_backward = true})
                  .empty());
}

}  // namespace
}  // namespace attncheck
