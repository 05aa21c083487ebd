// InProcessImplementation carries a backward problem as the plugin host does
// (impls/in_process.cpp, problem/grad_call.cpp): forward, decoded, then
// backward on the same region and call, the Outcome holding forward's out and
// lse and the gradients; a fault of forward is reported as forward's and
// backward is not called; a fault of backward as backward's. The
// implementation here is an echo (out = q, lse = i + 0.5; value_dim ==
// head_dim) whose backward is that forward's exact gradient (dq = dout,
// dk = dv = 0), misbehaving as `g_mode` says.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "impls/in_process.h"

namespace attncheck {
namespace {

enum class Mode { correct, forward_skips_out, backward_writes_out, backward_unsupported, backward_skips_dv };
Mode g_mode = Mode::correct;
int g_backward_calls = 0;

int64_t at(const int64_t* stride, int64_t b, int64_t h, int64_t r, int64_t x) {
  return b * stride[0] + h * stride[1] + r * stride[2] + x * stride[3];
}
int64_t q_len_of(const attncheck_call_v2* c, int64_t b) { return c->q_lens ? c->q_lens[b] : c->q_len; }
int64_t kv_len_of(const attncheck_call_v2* c, int64_t b) { return c->kv_lens ? c->kv_lens[b] : c->kv_len; }

int echo_forward(const attncheck_call_v2* c, char*, size_t) {  // f64 only
  for (int64_t b = 0; b < c->batch; ++b)
    for (int64_t h = 0; h < c->heads; ++h)
      for (int64_t i = 0; i < q_len_of(c, b); ++i) {
        for (int64_t x = 0; x < c->value_dim; ++x) {
          if (g_mode == Mode::forward_skips_out && b == 0 && h == 0 && i == 0 && x == 0) continue;
          static_cast<double*>(c->out.data)[at(c->out.stride, b, h, i, x)] =
              static_cast<const double*>(c->q.data)[at(c->q.stride, b, h, i, x)];
        }
        if (c->lse) c->lse[(b * c->heads + h) * c->q_len + i] = static_cast<float>(i) + 0.5f;
      }
  return ATTNCHECK_OK;
}

int echo_backward(const attncheck_call_v2* c, const attncheck_grad* g, char* err, size_t err_len) {
  ++g_backward_calls;
  if (g_mode == Mode::backward_unsupported) {
    std::snprintf(err, err_len, "no gradients with lengths");
    return ATTNCHECK_UNSUPPORTED;
  }
  auto put = [](const attncheck_out_view& v, int64_t b, int64_t h, int64_t r, int64_t x, double value) {
    static_cast<double*>(v.data)[at(v.stride, b, h, r, x)] = value;
  };
  for (int64_t b = 0; b < c->batch; ++b) {
    for (int64_t h = 0; h < c->heads; ++h)
      for (int64_t i = 0; i < q_len_of(c, b); ++i)
        for (int64_t d = 0; d < c->head_dim; ++d)
          put(g->dq, b, h, i, d, static_cast<const double*>(g->dout.data)[at(g->dout.stride, b, h, i, d)]);
    for (int64_t h = 0; h < c->kv_heads; ++h)
      for (int64_t j = 0; j < kv_len_of(c, b); ++j) {
        for (int64_t d = 0; d < c->head_dim; ++d) put(g->dk, b, h, j, d, 0.0);
        for (int64_t x = 0; x < c->value_dim; ++x)
          if (g_mode != Mode::backward_skips_dv || b != 1 || j != kv_len_of(c, b) - 1) put(g->dv, b, h, j, x, 0.0);
      }
  }
  if (g_mode == Mode::backward_writes_out) static_cast<double*>(c->out.data)[0] += 1.0;
  return ATTNCHECK_OK;
}

// batch 2, heads 2 over 1 kv head, q_len 3, kv_len 4, dims 2; q_lens {3, 2},
// kv_lens {4, 1}; lse; every gradient view strided.
Problem backward_problem() {
  Shape s{2, 2, 3, 4, 2, 2};
  s.kv_heads = 1;
  Problem p = make_problem(DType::f64, s);
  for (std::size_t i = 0; i < p.q.size(); ++i) p.q[i] = 0.5 * static_cast<double>(i + 1);
  p.dout.resize(static_cast<std::size_t>(s.out_size()));
  for (std::size_t i = 0; i < p.dout.size(); ++i) p.dout[i] = -0.25 * static_cast<double>(i + 1);
  p.q_lens = {3, 2};
  p.kv_lens = {4, 1};
  p.lse_requested = true;
  p.layouts.dout = TensorLayout{{0, 2, 1}, {0, 1, 1}};
  p.layouts.dq = TensorLayout{{2, 0, 1}, {0, 2, 0}};
  p.layouts.dk = TensorLayout{{0, 1, 2}, {3, 0, 1}};
  p.layouts.dv = TensorLayout{{0, 2, 1}, {0, 1, 0}};
  return p;
}

Outcome run_in(Mode mode, const Problem& p, bool with_backward = true) {
  g_mode = mode;
  g_backward_calls = 0;
  InProcessImplementation impl("echo-grad", echo_forward, kAllFeatures, with_backward ? echo_backward : nullptr);
  return impl.run(p);
}

TEST(InProcessGrad, ForwardThenBackwardOnTheSameCall) {
  const Problem p = backward_problem();
  ASSERT_EQ(p.inconsistency(), "");
  const Outcome o = run_in(Mode::correct, p);
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  EXPECT_EQ(g_backward_calls, 1);
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t d = 0; d < s.head_dim; ++d) {
        if (p.row_exists(bh, i)) {
          EXPECT_EQ(o.dq[p.q_at(bh, i, d)], p.dout[p.out_at(bh, i, d)]) << bh << " " << i << " " << d;
          EXPECT_EQ(o.out[p.out_at(bh, i, d)], p.q[p.q_at(bh, i, d)]);
        } else {
          EXPECT_TRUE(std::isnan(o.dq[p.q_at(bh, i, d)]));
        }
      }
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t j = 0; j < s.kv_len; ++j) {
      const bool live = j < p.kv_len_of(b);
      EXPECT_EQ(std::isnan(o.dk[p.k_at(b, j, 1)]), !live) << b << " " << j;
      EXPECT_EQ(std::isnan(o.dv[p.v_at(b, j, 0)]), !live) << b << " " << j;
      if (live) {
        EXPECT_EQ(o.dv[p.v_at(b, j, 0)], 0.0);
      }
    }
  EXPECT_EQ(o.lse[2], 2.5);
}

TEST(InProcessGrad, WithoutLseBackwardGetsNone) {
  Problem p = backward_problem();
  p.lse_requested = false;
  const Outcome o = run_in(Mode::correct, p);
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  EXPECT_TRUE(o.lse.empty());
  EXPECT_EQ(o.dq[p.q_at(3, 1, 1)], p.dout[p.out_at(3, 1, 1)]);
  const Outcome bad = run_in(Mode::backward_writes_out, p);
  EXPECT_EQ(bad.status, CallStatus::out_of_bounds_write) << bad.message;
}

TEST(InProcessGrad, AForwardFaultIsForwardsAndBackwardIsNotCalled) {
  const Outcome o = run_in(Mode::forward_skips_out, backward_problem());
  EXPECT_EQ(o.status, CallStatus::unwritten_output);
  EXPECT_NE(o.message.find("output elements left unwritten"), std::string::npos) << o.message;
  EXPECT_EQ(g_backward_calls, 0);
}

TEST(InProcessGrad, BackwardFaultsAreBackwards) {
  const Outcome out = run_in(Mode::backward_writes_out, backward_problem());
  EXPECT_EQ(out.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(out.message.find("backward wrote into out, which is an input of the backward call"), std::string::npos)
      << out.message;
  const Outcome dv = run_in(Mode::backward_skips_dv, backward_problem());
  EXPECT_EQ(dv.status, CallStatus::unwritten_output);
  // dv of batch 1's only key (kv_lens[1] = 1), both columns.
  EXPECT_NE(dv.message.find("backward left 2 of 10 dv elements unwritten, first at dv[b=1][h=0][j=0][c=0]"),
            std::string::npos)
      << dv.message;
  const Outcome refused = run_in(Mode::backward_unsupported, backward_problem());
  EXPECT_EQ(refused.status, CallStatus::unsupported);
  EXPECT_EQ(refused.message, "backward: no gradients with lengths");
}

TEST(InProcessGrad, WithoutBackwardABackwardProblemIsNotCalled) {
  const Outcome o = run_in(Mode::correct, backward_problem(), false);
  EXPECT_EQ(o.status, CallStatus::unsupported);
  EXPECT_NE(o.message.find("uses backward, which the implementation does not declare"), std::string::npos)
      << o.message;
  EXPECT_EQ(g_backward_calls, 0);
}

}  // namespace
}  // namespace attncheck
