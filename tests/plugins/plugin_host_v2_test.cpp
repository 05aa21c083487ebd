// The plugin host speaks ABI v2 (src/host/, call/call_layout.*): a
// plugin exporting attncheck_plugin_v2 is called through it, with its
// declared features; strided views, lengths, lse and every per-call array
// arrive intact in the child; writes into the gaps of out's view or into its
// padding rows are out-of-bounds writes; a broken v2 export is refused with
// the reason. The plugins are variants of tests/plugins/v2_echo_plugin.c.
#include <gtest/gtest.h>

#include <cmath>

#include "host/plugin_host.h"
#include "test_plugin_load.h"
#include "problem/problem.h"


namespace attncheck {
namespace {

std::string v2_plugin(const std::string& name) { return test::test_plugin_path("v2", name); }
std::unique_ptr<Implementation> load(const std::string& name) { return test::load_test_plugin("v2", name); }
std::string refusal(const std::string& name) { return test::test_plugin_refusal("v2", name); }

// batch 2, heads 4 over 2 kv heads, q_len 5, kv_len 3, dims 3; q holds 1, 2, 3, ...
Problem strided_problem(DType t) {
  Shape s{2, 4, 5, 3, 3, 3};
  s.kv_heads = 2;
  Problem p = make_problem(t, s, Causal::bottom_right);
  for (std::size_t i = 0; i < p.q.size(); ++i) p.q[i] = static_cast<double>(i + 1);
  p.layouts.q = TensorLayout{{0, 2, 1}, {0, 3, 1}};  // BSHD with gaps after heads and rows
  p.layouts.k = TensorLayout{{1, 0, 2}, {2, 0, 0}};
  p.layouts.v = TensorLayout{{0, 1, 2}, {0, 0, 4}};
  p.layouts.out = TensorLayout{{0, 2, 1}, {5, 2, 1}};  // gaps of 1 (rows), 2 (heads), 5 (batch)
  p.q_lens = {5, 2};
  p.kv_lens = {3, 1};
  p.lse_requested = true;
  p.window_left = 1;
  p.softcap = 30;
  p.alibi_slopes = {0.5, 0.25, 0.125, 0.0625};
  p.sinks = {0, 1, -1, 2};
  p.bias.assign(static_cast<std::size_t>(s.kv_len), 0.5);  // broadcast over batch, heads, rows
  p.bias_broadcast = Broadcast{false, false, false};
  p.mask.assign(static_cast<std::size_t>(s.heads * s.kv_len), 1);  // per head only
  p.mask_broadcast = Broadcast{false, true, false};
  return p;
}

TEST(PluginHostV2, DeclaredFeaturesAreReported) {
  auto impl = load("echo");
  ASSERT_TRUE(impl);
  EXPECT_EQ(impl->features(), kAllFeatures);
  EXPECT_EQ(impl->name(), "v2-echo");
}

TEST(PluginHostV2, StridedViewsLengthsAndLseArriveIntact) {
  for (DType t : {DType::f32, DType::f64}) {
    auto impl = load("echo");
    ASSERT_TRUE(impl);
    const Problem p = strided_problem(t);
    ASSERT_EQ(p.inconsistency(), "");
    ASSERT_EQ(p.features(), kAllFeatures) << feature_list(p.features());
    const Outcome o = impl->run(p);
    ASSERT_EQ(o.status, CallStatus::ok) << o.message;
    ASSERT_EQ(o.out.size(), static_cast<std::size_t>(p.shape.out_size()));
    ASSERT_EQ(o.lse.size(), static_cast<std::size_t>(p.shape.rows()));
    for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
      for (int64_t i = 0; i < p.shape.q_len; ++i) {
        const bool live = p.row_exists(bh, i);
        EXPECT_EQ(o.lse[bh * p.shape.q_len + i], live ? i + 0.5 : 0.0) << "bh " << bh << " i " << i;
        for (int64_t c = 0; c < p.shape.value_dim; ++c)
          EXPECT_EQ(o.out[p.out_at(bh, i, c)], live ? p.q[p.q_at(bh, i, c)] : 0.0)
              << "bh " << bh << " i " << i << " c " << c;
      }
  }
}

TEST(PluginHostV2, WriteIntoAGapOfOutIsOutOfBounds) {
  auto impl = load("echo_gap");
  ASSERT_TRUE(impl);
  const Outcome o = impl->run(strided_problem(DType::f32));
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("a gap after the last column"), std::string::npos) << o.message;
}

TEST(PluginHostV2, WriteIntoAPaddingRowIsOutOfBounds) {
  auto impl = load("echo_padding");
  ASSERT_TRUE(impl);
  const Outcome o = impl->run(strided_problem(DType::f32));
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("the padding row [b=1][h=0][i=2] (q_lens[1] = 2)"), std::string::npos) << o.message;
}

TEST(PluginHostV2, V2IsPreferredOverV1) {
  auto impl = load("echo_with_v1");
  ASSERT_TRUE(impl);
  EXPECT_EQ(impl->features(), kAllFeatures);
  const Outcome o = impl->run(make_problem(DType::f32, Shape{1, 1, 2, 2, 2, 2}));
  EXPECT_EQ(o.status, CallStatus::ok) << o.message;
}

TEST(PluginHostV2, BrokenV2ExportsAreRefusedWithTheReason) {
  const std::string abi = refusal("echo_wrong_abi");
  EXPECT_NE(abi.find("it reports plugin ABI version 1 from attncheck_plugin_v2(), which must report version 2"),
            std::string::npos)
      << abi;
  const std::string bits = refusal("echo_unknown_features");
  EXPECT_NE(bits.find("declares feature bits 0x100000"), std::string::npos) << bits;
}

TEST(PluginHostV2, AV1PluginIsNotSentV2Problems) {
  std::string error;
  auto v1 = load_plugin(std::string(ATTNCHECK_TEST_PLUGIN_DIR) + "/no_max_plugin.so", {}, error);
  ASSERT_TRUE(v1) << error;
  EXPECT_EQ(v1->features(), kV1Features);
  const Outcome o = v1->run(strided_problem(DType::f32));
  EXPECT_EQ(o.status, CallStatus::unsupported);
  EXPECT_NE(o.message.find("which the implementation does not declare"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace attncheck
