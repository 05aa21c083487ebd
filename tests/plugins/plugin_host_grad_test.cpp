// The plugin host carries backward calls (src/host/, call/grad_call.cpp):
// a v2 plugin whose backward is not NULL declares kBackwardFeature; a
// backward problem is its forward call, then its backward call on the same
// shared region, with dout and the strided gradient views intact in the
// child and forward's out and lse as backward's inputs; a write into a gap of
// dq, into out or beyond every guard, an unwritten dk element, a crash or a
// hang in backward each comes back as its CallStatus, the message saying it
// was backward. The
// plugins are variants of tests/plugins/v2_grad_plugin.c (whose backward is
// the exact gradient of its echo forward: dq = dout, dk = dv = 0).
#include <gtest/gtest.h>

#include <cmath>

#include "host/plugin_host.h"
#include "problem/problem.h"

#ifndef ATTNCHECK_TEST_PLUGIN_DIR
#error "ATTNCHECK_TEST_PLUGIN_DIR must name the folder of the test plugins"
#endif

namespace attncheck {
namespace {

std::string test_plugin(const std::string& name) { return std::string(ATTNCHECK_TEST_PLUGIN_DIR) + "/" + name + ".so"; }

std::unique_ptr<Implementation> load(const std::string& name, int timeout_ms = 2000) {
  std::string error;
  PluginOptions options;
  options.timeout_ms = timeout_ms;
  auto impl = load_plugin(test_plugin(name), options, error);
  EXPECT_TRUE(impl) << error;
  return impl;
}

// batch 2, heads 4 over 2 kv heads, q_len 3, kv_len 4, dims 2; q_lens {3, 1},
// kv_lens {4, 2}; lse; q holds 1, 2, 3, ..., dout 0.5, 1, 1.5, ...; dout, dq,
// dk and dv each with its own strided layout (dq: a gap after each row).
Problem backward_problem(DType t) {
  Shape s{2, 4, 3, 4, 2, 2};
  s.kv_heads = 2;
  Problem p = make_problem(t, s);
  for (std::size_t i = 0; i < p.q.size(); ++i) p.q[i] = static_cast<double>(i + 1);
  p.dout.resize(static_cast<std::size_t>(s.out_size()));
  for (std::size_t i = 0; i < p.dout.size(); ++i) p.dout[i] = 0.5 * static_cast<double>(i + 1);
  p.q_lens = {3, 1};
  p.kv_lens = {4, 2};
  p.lse_requested = true;
  p.layouts.out = TensorLayout{{0, 2, 1}, {0, 1, 0}};
  p.layouts.dout = TensorLayout{{0, 2, 1}, {1, 2, 0}};
  p.layouts.dq = TensorLayout{{0, 1, 2}, {0, 0, 1}};
  p.layouts.dk = TensorLayout{{1, 0, 2}, {0, 3, 0}};
  p.layouts.dv = TensorLayout{{0, 2, 1}, {2, 0, 1}};
  return p;
}

TEST(PluginHostGrad, APluginWithBackwardDeclaresIt) {
  auto grad = load("v2_grad_plugin");
  ASSERT_TRUE(grad);
  EXPECT_EQ(grad->features(), kAllFeatures | kBackwardFeature);
  EXPECT_EQ(grad->name(), "v2-grad");
}

TEST(PluginHostGrad, APluginWithoutBackwardIsNotSentBackwardProblems) {
  for (const char* name : {"v2_echo_plugin", "no_max_plugin"}) {  // v2 without backward, v1
    auto impl = load(name);
    ASSERT_TRUE(impl);
    EXPECT_EQ(impl->features() & kBackwardFeature, 0u) << name;
    Problem p = make_problem(DType::f32, Shape{1, 1, 2, 2, 2, 2});
    p.dout.assign(4, 1.0);
    const Outcome o = impl->run(p);
    EXPECT_EQ(o.status, CallStatus::unsupported) << name;
    EXPECT_NE(o.message.find("uses backward, which the implementation does not declare"), std::string::npos)
        << o.message;
  }
}

TEST(PluginHostGrad, GradientsArriveThroughTheirStrides) {
  for (DType t : {DType::f32, DType::f64}) {
    auto impl = load("v2_grad_plugin");
    ASSERT_TRUE(impl);
    const Problem p = backward_problem(t);
    ASSERT_EQ(p.inconsistency(), "");
    const Outcome o = impl->run(p);
    ASSERT_EQ(o.status, CallStatus::ok) << o.message;
    const Shape& s = p.shape;
    ASSERT_EQ(o.dq.size(), static_cast<std::size_t>(s.q_size()));
    ASSERT_EQ(o.dk.size(), static_cast<std::size_t>(s.k_size()));
    ASSERT_EQ(o.dv.size(), static_cast<std::size_t>(s.v_size()));
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i)
        for (int64_t d = 0; d < s.head_dim; ++d) {
          const double dq = o.dq[p.q_at(bh, i, d)];
          if (p.row_exists(bh, i)) {
            EXPECT_EQ(dq, p.dout[p.out_at(bh, i, d)]) << "bh " << bh << " i " << i << " d " << d;
            EXPECT_EQ(o.out[p.out_at(bh, i, d)], p.q[p.q_at(bh, i, d)]) << "forward's out";
          } else {
            EXPECT_TRUE(std::isnan(dq)) << "padding row: bh " << bh << " i " << i;
          }
        }
    for (int64_t kv_bh = 0; kv_bh < s.batch * s.kv_head_count(); ++kv_bh)
      for (int64_t j = 0; j < s.kv_len; ++j)
        for (int64_t d = 0; d < s.head_dim; ++d) {
          const bool live = j < p.kv_len_of(kv_bh / s.kv_head_count());
          const double dk = o.dk[p.k_at(kv_bh, j, d)], dv = o.dv[p.v_at(kv_bh, j, d)];
          EXPECT_EQ(live ? dk : 0.0, 0.0);
          EXPECT_EQ(live ? dv : 0.0, 0.0);
          EXPECT_EQ(std::isnan(dk), !live) << "kv_bh " << kv_bh << " j " << j;
          EXPECT_EQ(std::isnan(dv), !live) << "kv_bh " << kv_bh << " j " << j;
        }
    EXPECT_EQ(o.lse[1], 1.5);
  }
}

TEST(PluginHostGrad, AForwardProblemIsOnlyForward) {
  auto impl = load("v2_grad_plugin");
  ASSERT_TRUE(impl);
  Problem p = backward_problem(DType::f32);
  p.dout.clear();
  p.layouts.dout = p.layouts.dq = p.layouts.dk = p.layouts.dv = TensorLayout{};
  const Outcome o = impl->run(p);
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  EXPECT_TRUE(o.dq.empty() && o.dk.empty() && o.dv.empty());
}

TEST(PluginHostGrad, BackwardWritingAGapOfDqIsOutOfBounds) {
  auto impl = load("v2_grad_gap_plugin");
  ASSERT_TRUE(impl);
  const Outcome o = impl->run(backward_problem(DType::f32));
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("backward wrote into dq's allocation outside its elements"), std::string::npos)
      << o.message;
  EXPECT_NE(o.message.find("a gap after the last column"), std::string::npos) << o.message;
}

TEST(PluginHostGrad, BackwardWritingOutIsOutOfBounds) {
  auto impl = load("v2_grad_out_plugin");
  ASSERT_TRUE(impl);
  const Outcome o = impl->run(backward_problem(DType::f64));
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("backward wrote into out, which is an input of the backward call"), std::string::npos)
      << o.message;
}

TEST(PluginHostGrad, BackwardWritingBeyondTheGuardsIsOutOfBounds) {
  auto impl = load("v2_grad_stray_plugin");
  ASSERT_TRUE(impl);
  const Outcome o = impl->run(backward_problem(DType::f32));
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("backward wrote"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("bytes past the end of dv, beyond its guard zone"), std::string::npos) << o.message;
}

TEST(PluginHostGrad, AnUnwrittenDkElementIsNamed) {
  auto impl = load("v2_grad_skip_dk_plugin");
  ASSERT_TRUE(impl);
  const Outcome o = impl->run(backward_problem(DType::f32));
  EXPECT_EQ(o.status, CallStatus::unwritten_output);
  // dk's live elements: (4 + 2) keys * 2 kv heads * head_dim 2.
  EXPECT_NE(o.message.find("backward left 1 of 24 dk elements unwritten, first at dk[b=0][h=1][j=2][d=0]"),
            std::string::npos)
      << o.message;
}

TEST(PluginHostGrad, ACrashInBackwardIsACrashAndTheHostRestarts) {
  auto impl = load("v2_grad_crash_plugin");
  ASSERT_TRUE(impl);
  const Outcome o = impl->run(backward_problem(DType::f32));
  EXPECT_EQ(o.status, CallStatus::crash);
  EXPECT_EQ(o.message, "killed by SIGSEGV (Segmentation fault) during backward");
  Problem forward_only = backward_problem(DType::f32);
  forward_only.dout.clear();
  forward_only.layouts.dout = forward_only.layouts.dq = forward_only.layouts.dk = forward_only.layouts.dv = {};
  const Outcome after = impl->run(forward_only);
  EXPECT_EQ(after.status, CallStatus::ok) << after.message;
}

TEST(PluginHostGrad, AHangInBackwardIsATimeout) {
  auto impl = load("v2_grad_hang_plugin", 300);
  ASSERT_TRUE(impl);
  const Outcome o = impl->run(backward_problem(DType::f32));
  EXPECT_EQ(o.status, CallStatus::timeout);
  EXPECT_EQ(o.message.rfind("no answer within 300 ms of CPU time", 0), 0u) << o.message;
  EXPECT_NE(o.message.find(" during backward"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace attncheck
