// InProcessImplementation carries a backward problem as the plugin host does
// (impls/in_process.cpp, call/grad_call.cpp): forward, decoded, then
// backward on the same region and call, the Outcome holding forward's out and
// lse and the gradients; a fault of forward is reported as forward's and
// backward is not called; a fault of backward as backward's. The
// implementation here is an echo (out = q, lse = i + 0.5; value_dim ==
// head_dim) whose backward is that forward's exact gradient (dq = dout,
// dk = dv = 0), misbehaving as `g_mode` says. Then the built-ins' own
// backward (reference, naive, online) through dense and strided views.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "impls/in_process.h"

namespace attncheck {
namespace {

enum class Mode { correct, forward_skips_out, backward_writes_out, backward_unsupported, backward_skips_dv };
Mode g_mode = Mode::correct;
int g_backward_calls = 0;
bool g_backward_saw_lse = false;

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
  g_backward_saw_lse = c->lse != nullptr;
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

Outcome run_in(Mode mode, const Problem& p, bool with_backward = true, FeatureBits declared = kAllFeatures) {
  g_mode = mode;
  g_backward_calls = 0;
  g_backward_saw_lse = false;
  InProcessImplementation impl("echo-grad", echo_forward, declared, with_backward ? echo_backward : nullptr);
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

TEST(InProcessGrad, WithoutLseDeclaredBackwardGetsNone) {
  Problem p = backward_problem();
  p.lse_requested = false;
  const FeatureBits no_lse = kAllFeatures & ~ATTNCHECK_FEATURE_LSE;
  const Outcome o = run_in(Mode::correct, p, true, no_lse);
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  EXPECT_FALSE(g_backward_saw_lse);
  EXPECT_TRUE(o.lse.empty());
  EXPECT_EQ(o.dq[p.q_at(3, 1, 1)], p.dout[p.out_at(3, 1, 1)]);
  const Outcome bad = run_in(Mode::backward_writes_out, p, true, no_lse);
  EXPECT_EQ(bad.status, CallStatus::out_of_bounds_write) << bad.message;
}

// The spec: backward gets the implementation's own lse whenever it declares
// LSE, whether or not the problem asked for one (the outcome then has none).
TEST(InProcessGrad, WithLseDeclaredBackwardGetsItsOwnLseEvenUnasked) {
  Problem p = backward_problem();
  p.lse_requested = false;
  const Outcome o = run_in(Mode::correct, p);
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  EXPECT_TRUE(g_backward_saw_lse);
  EXPECT_TRUE(o.lse.empty());
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

// --- The built-ins' backward through the transport ---

// f64, batch 2, heads 4 over 2 kv heads, q_len 5, kv_len 6, head_dim 3,
// value_dim 2, causal bottom right, q_lens {5, 3}, kv_lens {6, 2} (batch 1's
// first rows see no key), lse; values on a grid of 1/16 in [-2, 2], padding
// NaN in every input. Dense layouts.
Problem builtin_backward_problem(uint32_t seed) {
  Shape s{2, 4, 5, 6, 3, 2};
  s.kv_heads = 2;
  Problem p = make_problem(DType::f64, s, Causal::bottom_right);
  p.q_lens = {5, 3};
  p.kv_lens = {6, 2};
  p.lse_requested = true;
  p.dout.resize(static_cast<std::size_t>(s.out_size()));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> grid(-32, 32);
  for (auto* t : {&p.q, &p.k, &p.v, &p.dout})
    for (double& x : *t) x = grid(rng) / 16.0;
  const double nan = std::nan("");
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = p.q_len_of(bh / s.heads); i < s.q_len; ++i) {
      for (int64_t d = 0; d < s.head_dim; ++d) p.q[p.q_at(bh, i, d)] = nan;
      for (int64_t c = 0; c < s.value_dim; ++c) p.dout[p.out_at(bh, i, c)] = nan;
    }
  for (int64_t kv_bh = 0; kv_bh < s.batch * s.kv_head_count(); ++kv_bh)
    for (int64_t j = p.kv_len_of(kv_bh / s.kv_head_count()); j < s.kv_len; ++j) {
      for (int64_t d = 0; d < s.head_dim; ++d) p.k[p.k_at(kv_bh, j, d)] = nan;
      for (int64_t c = 0; c < s.value_dim; ++c) p.v[p.v_at(kv_bh, j, c)] = nan;
    }
  return p;
}

// The same problem with every view (forward's and the gradients') strided.
Problem strided(Problem p) {
  p.layouts.q = TensorLayout{{0, 2, 1}, {0, 1, 0}};
  p.layouts.k = TensorLayout{{2, 0, 1}, {1, 0, 2}};
  p.layouts.out = TensorLayout{{0, 2, 1}, {0, 0, 1}};
  p.layouts.dout = TensorLayout{{1, 2, 0}, {2, 1, 0}};
  p.layouts.dq = TensorLayout{{0, 2, 1}, {0, 2, 1}};
  p.layouts.dk = TensorLayout{{1, 0, 2}, {0, 3, 0}};
  p.layouts.dv = TensorLayout{{0, 2, 1}, {1, 0, 1}};
  return p;
}

// <out, dout> over the live rows of a forward run of p with q, k, v moved by
// t * dir (padding stays as it is).
double objective(Implementation& impl, const Problem& p, const std::array<std::vector<double>, 3>& dir, double t) {
  Problem f = p;
  f.dout.clear();
  f.layouts.dout = f.layouts.dq = f.layouts.dk = f.layouts.dv = TensorLayout{};
  std::vector<double>* inputs[] = {&f.q, &f.k, &f.v};
  for (int a = 0; a < 3; ++a)
    for (std::size_t i = 0; i < inputs[a]->size(); ++i)
      if (!std::isnan((*inputs[a])[i])) (*inputs[a])[i] += t * dir[a][i];
  const Outcome o = impl.run(f);
  EXPECT_EQ(o.status, CallStatus::ok) << o.message;
  if (o.status != CallStatus::ok) return std::nan("");
  double sum = 0;
  for (std::size_t i = 0; i < p.dout.size(); ++i)
    if (!std::isnan(p.dout[i])) sum += o.out[i] * p.dout[i];
  return sum;
}

// Checks one built-in's backward through the transport: the same gradients
// through dense and strided views (bit for bit, padding NaN), 0 for rows that
// see no key, and a directional derivative of its own forward (central
// differences) equal to <dq, dir_q> + <dk, dir_k> + <dv, dir_v>.
void check_builtin_backward(const char* name) {
  SCOPED_TRACE(name);
  auto impl = make_builtin(name);
  ASSERT_TRUE(impl);
  ASSERT_NE(impl->features() & kBackwardFeature, 0u) << name << " has no backward";
  const Problem dense = builtin_backward_problem(20261201);
  const Problem strided_p = strided(dense);
  ASSERT_EQ(strided_p.inconsistency(), "");
  const Outcome a = impl->run(dense), b = impl->run(strided_p);
  ASSERT_EQ(a.status, CallStatus::ok) << a.message;
  ASSERT_EQ(b.status, CallStatus::ok) << b.message;
  const std::vector<double>* ga[] = {&a.dq, &a.dk, &a.dv};
  const std::vector<double>* gb[] = {&b.dq, &b.dk, &b.dv};
  for (int g = 0; g < 3; ++g) {
    ASSERT_EQ(ga[g]->size(), gb[g]->size());
    for (std::size_t i = 0; i < ga[g]->size(); ++i) {
      const double x = (*ga[g])[i], y = (*gb[g])[i];
      EXPECT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << "gradient " << g << " element " << i << ": " << x
                                                             << " dense, " << y << " strided";
    }
  }
  const Shape& s = dense.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t d = 0; d < s.head_dim; ++d) {
        const double dq = a.dq[dense.q_at(bh, i, d)];
        if (!dense.row_exists(bh, i)) {
          EXPECT_TRUE(std::isnan(dq)) << "padding row " << bh << " " << i;
        } else if (!dense.row_sees_any_key(bh, i)) {
          EXPECT_EQ(dq, 0.0) << "row " << bh << " " << i << " sees no key";
        }
      }
  // The directional derivative along a random direction of the live elements.
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  std::array<std::vector<double>, 3> dir = {dense.q, dense.k, dense.v};
  double predicted = 0, scale = 0;
  for (int g = 0; g < 3; ++g)
    for (std::size_t i = 0; i < dir[g].size(); ++i) {
      dir[g][i] = std::isnan(dir[g][i]) ? 0.0 : normal(rng);
      const double grad = (*ga[g])[i];
      if (dir[g][i] != 0.0) {
        ASSERT_FALSE(std::isnan(grad)) << "gradient " << g << " element " << i << " of a live element is NaN";
        predicted += grad * dir[g][i];
        scale += std::abs(grad * dir[g][i]);
      }
    }
  // f64: the central difference's truncation (~h^2) and rounding (~1e-16 |f| / h)
  // are both near 1e-11 of `scale` here (measured: 5e-10 against 58); a wrong
  // gradient term is off by O(1) (the backward zoo: 0.8 to 3.6).
  const double h = 1e-5;
  const double measured = (objective(*impl, dense, dir, h) - objective(*impl, dense, dir, -h)) / (2 * h);
  EXPECT_NEAR(measured, predicted, 1e-8 * (scale + 1)) << "central difference " << measured << ", gradients "
                                                        << predicted;
}

TEST(InProcessGrad, ReferenceBackwardThroughStridedViewsAndLengths) { check_builtin_backward("reference"); }
TEST(InProcessGrad, NaiveBackwardThroughStridedViewsAndLengths) { check_builtin_backward("naive"); }
TEST(InProcessGrad, OnlineBackwardThroughStridedViewsAndLengths) { check_builtin_backward("online"); }

}  // namespace
}  // namespace attncheck
