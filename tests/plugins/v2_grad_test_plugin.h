// A v2 plugin's backward entry called directly (dlopen, as v2_test_plugin.h calls
// forward), and checked against central differences of the same plugin's own
// forward in f64: what example_v2_plugin_test and torch_v2_adapter_test share for
// gradients. Nothing of src/ is used: it checks a plugin apart from the checker.
//   - dout, dq, dk, dv are placed through their own Layout (axis order, gaps, lead
//     room); dout's elements that are not live (gaps, padding rows) are NaN, so that
//     a read leaks;
//   - every byte of dq, dk, dv is 0xFF before the call (NaN in every dtype: a
//     gradient accumulated into the buffer instead of overwriting it is NaN), and every
//     byte that is not a live element must still be 0xFF after it;
//   - out and lse, which hold the plugin's own forward results and are inputs of the
//     backward call, and every other input must come back unchanged.
#ifndef ATTNCHECK_TESTS_V2_GRAD_TEST_PLUGIN_H
#define ATTNCHECK_TESTS_V2_GRAD_TEST_PLUGIN_H

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "v2_test_plugin.h"

namespace v2test {

// What a backward call adds to a Case.
struct GradCase {
  std::vector<double> dout;  // [batch][heads][q_len][value_dim], exact in the dtype
  Layout dout_layout, dq_layout, dk_layout, dv_layout;
};

// dout drawn from the grid for a case (padding rows too: encode_grad replaces them
// with NaN).
inline GradCase grad_case_for(const Case& c, uint32_t salt = 0) {
  std::mt19937 rng(seed() + 7919u + salt);
  GradCase g;
  g.dout.resize(static_cast<size_t>(c.batch * c.heads * c.q_len * c.value_dim));
  for (double& x : g.dout) x = grid(rng);
  return g;
}

// Gradients as logical doubles: dq [batch][heads][q_len][head_dim],
// dk [batch][kv_heads][kv_len][head_dim], dv [batch][kv_heads][kv_len][value_dim].
// Elements that are not live (padding rows of dq, padding keys of dk, dv) are NaN.
struct Gradients {
  std::vector<double> dq, dk, dv;
};

// The backward call's own buffers, on top of an Encoded forward call.
struct GradEncoded {
  Placed dout, dq, dk, dv;
  attncheck_grad grad{};
  bool exact = true;  // every dout value fit the dtype

  GradEncoded() = default;
  GradEncoded(const GradEncoded&) = delete;  // grad points into the buffers
};

inline attncheck_view input_view(Placed& p) {
  attncheck_view v{};
  v.data = p.first();
  for (int a = 0; a < 4; ++a) v.stride[a] = p.stride[a];
  return v;
}
inline attncheck_out_view output_view(Placed& p) {
  attncheck_out_view v{};
  v.data = p.first();
  for (int a = 0; a < 4; ++a) v.stride[a] = p.stride[a];
  return v;
}

inline void encode_grad(const Case& c, const GradCase& g, GradEncoded& ge) {
  const attncheck_dtype t = c.dtype;
  const size_t es = element_size(t);
  ge.exact = true;
  ge.dout = place(g.dout_layout, {c.batch, c.heads, c.q_len, c.value_dim}, es);
  ge.dq = place(g.dq_layout, {c.batch, c.heads, c.q_len, c.head_dim}, es);
  ge.dk = place(g.dk_layout, {c.batch, c.kv_heads, c.kv_len, c.head_dim}, es);
  ge.dv = place(g.dv_layout, {c.batch, c.kv_heads, c.kv_len, c.value_dim}, es);
  fill_nan(ge.dout, t);
  for (Placed* p : {&ge.dq, &ge.dk, &ge.dv}) std::fill(p->bytes.begin(), p->bytes.end(), kOutputPoison);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.lq(b); ++i)
        for (int64_t col = 0; col < c.value_dim; ++col)
          encode(t, g.dout[static_cast<size_t>(((b * c.heads + h) * c.q_len + i) * c.value_dim + col)],
                 ge.dout.at(b, h, i, col), ge.exact);
  ge.grad.dout = input_view(ge.dout);
  ge.grad.dq = output_view(ge.dq);
  ge.grad.dk = output_view(ge.dk);
  ge.grad.dv = output_view(ge.dv);
}

// sum over live rows of out * dout for the plugin's forward on c; NaN when forward
// fails. c's dtype is used as it is (the central differences pass an f64 case).
inline double objective(const attncheck_impl_v2& impl, const Case& c, const std::vector<double>& dout) {
  Encoded e;
  encode_call(c, e);
  char err[256] = "";
  if (impl.forward(&e.call, err, sizeof err) != ATTNCHECK_OK) return NAN;
  double sum = 0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.lq(b); ++i)
        for (int64_t col = 0; col < c.value_dim; ++col)
          sum += decode(c.dtype, e.out.at(b, h, i, col)) *
                 dout[static_cast<size_t>(((b * c.heads + h) * c.q_len + i) * c.value_dim + col)];
  return sum;
}

// The gradients of sum(out * dout) by central differences of the plugin's own forward,
// called in f64 on c's values (which every dtype's grid holds exactly): each live
// element x of q, k, v in turn is set to x +- step and
//   d/dx ~ (f(x + step) - f(x - step)) / (2 step),
// whose truncation error is step^2 / 6 f''' and rounding error ~ 1e-16 |f| / step. A
// step of 2^-17 keeps both near 1e-10 for the tests' values of order 1 (x +- step is
// exact in f64).
inline Gradients central_differences(const attncheck_impl_v2& impl, const Case& c, const std::vector<double>& dout) {
  constexpr double kStep = 1.0 / (1 << 17);
  Case f64 = c;
  f64.dtype = ATTNCHECK_F64;
  Gradients g;
  g.dq.assign(c.q.size(), NAN);
  g.dk.assign(c.k.size(), NAN);
  g.dv.assign(c.v.size(), NAN);
  auto differentiate = [&](std::vector<double>& x, size_t at) {
    const double x0 = x[at];
    x[at] = x0 + kStep;
    const double up = objective(impl, f64, dout);
    x[at] = x0 - kStep;
    const double down = objective(impl, f64, dout);
    x[at] = x0;
    return (up - down) / (2 * kStep);
  };
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.lq(b); ++i)
        for (int64_t d = 0; d < c.head_dim; ++d) {
          const size_t at = static_cast<size_t>(((b * c.heads + h) * c.q_len + i) * c.head_dim + d);
          g.dq[at] = differentiate(f64.q, at);
        }
    for (int64_t kh = 0; kh < c.kv_heads; ++kh)
      for (int64_t j = 0; j < c.lk(b); ++j) {
        for (int64_t d = 0; d < c.head_dim; ++d) {
          const size_t at = static_cast<size_t>(((b * c.kv_heads + kh) * c.kv_len + j) * c.head_dim + d);
          g.dk[at] = differentiate(f64.k, at);
        }
        for (int64_t col = 0; col < c.value_dim; ++col) {
          const size_t at = static_cast<size_t>(((b * c.kv_heads + kh) * c.kv_len + j) * c.value_dim + col);
          g.dv[at] = differentiate(f64.v, at);
        }
      }
  }
  return g;
}

// Allowed |got - want| for a gradient element: the store's rounding in the dtype, plus
// the central differences' own error, plus `slack` * (1 + |want|) for a plugin that
// computes in its dtype (0 for the example, which computes in double).
inline double grad_tolerance(attncheck_dtype t, double want, double slack) {
  return half_ulp(t) * std::fabs(want) + 1e-7 * (1 + std::fabs(want)) + slack * (1 + std::fabs(want));
}

// The plugin's gradients, decoded (NaN where not live), after a backward call.
inline Gradients decode_gradients(const Case& c, GradEncoded& ge) {
  Gradients g;
  g.dq.assign(c.q.size(), NAN);
  g.dk.assign(c.k.size(), NAN);
  g.dv.assign(c.v.size(), NAN);
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.lq(b); ++i)
        for (int64_t d = 0; d < c.head_dim; ++d)
          g.dq[static_cast<size_t>(((b * c.heads + h) * c.q_len + i) * c.head_dim + d)] =
              decode(c.dtype, ge.dq.at(b, h, i, d));
    for (int64_t kh = 0; kh < c.kv_heads; ++kh)
      for (int64_t j = 0; j < c.lk(b); ++j) {
        for (int64_t d = 0; d < c.head_dim; ++d)
          g.dk[static_cast<size_t>(((b * c.kv_heads + kh) * c.kv_len + j) * c.head_dim + d)] =
              decode(c.dtype, ge.dk.at(b, kh, j, d));
        for (int64_t col = 0; col < c.value_dim; ++col)
          g.dv[static_cast<size_t>(((b * c.kv_heads + kh) * c.kv_len + j) * c.value_dim + col)] =
              decode(c.dtype, ge.dv.at(b, kh, j, col));
      }
  }
  return g;
}

// The elements of a gradient's allocation that are not live and were written, as one
// line (empty: none). `heads` and `cols` are the view's extents (heads, head_dim for dq;
// kv_heads, head_dim or value_dim for dk, dv) and `live_rows(b)` the rows (dq) or keys
// (dk, dv) that exist in batch b.
template <class LiveRows>
inline std::string gradient_writes_outside_live(const char* name, const Placed& p, int64_t batch, int64_t heads,
                                                int64_t cols, LiveRows live_rows) {
  std::vector<bool> live(p.bytes.size() / p.elem, false);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < live_rows(b); ++r)
        for (int64_t col = 0; col < cols; ++col) live[static_cast<size_t>(p.lead + p.offset(b, h, r, col))] = true;
  int written = 0;
  for (size_t el = 0; el < live.size(); ++el)
    if (!live[el])
      for (size_t byte = 0; byte < p.elem; ++byte)
        if (p.bytes[el * p.elem + byte] != kOutputPoison) {
          ++written;
          break;
        }
  return written ? std::string(name) + ": " + std::to_string(written) + " element(s) of the allocation that are not live were written\n"
                 : "";
}

// Calls forward and then backward of `impl` on (c, g), and returns every mismatch
// (empty: all is well): backward's rc, inputs (out and lse included) changed, writes
// outside the live elements of dq, dk, dv, and live elements farther from `want` than
// grad_tolerance(slack). `got` receives the decoded gradients.
inline std::string run_backward_on(const attncheck_impl_v2& impl, const Case& c, const GradCase& g,
                                   const Gradients& want, double slack = 0, Gradients* got = nullptr) {
  Encoded e;
  encode_call(c, e);
  if (!e.exact) return "test error: a value does not fit the dtype";
  char err[256] = "";
  int rc = impl.forward(&e.call, err, sizeof err);
  if (rc != ATTNCHECK_OK) return "forward returned " + std::to_string(rc) + ": " + err;
  GradEncoded ge;
  encode_grad(c, g, ge);
  if (!ge.exact) return "test error: a dout value does not fit the dtype";
  const auto q0 = e.q.bytes, k0 = e.k.bytes, v0 = e.v.bytes, out0 = e.out.bytes, mask0 = e.mask.bytes,
             bias0 = e.bias.bytes, dout0 = ge.dout.bytes;
  const std::vector<float> lse0 = e.lse;
  if (!impl.backward) return "the plugin has no backward";
  rc = impl.backward(&e.call, &ge.grad, err, sizeof err);
  if (rc != ATTNCHECK_OK) return "backward returned " + std::to_string(rc) + ": " + err;
  std::ostringstream problems;
  if (e.q.bytes != q0 || e.k.bytes != k0 || e.v.bytes != v0 || e.mask.bytes != mask0 || e.bias.bytes != bias0)
    problems << "backward wrote into q, k, v, the mask or the bias\n";
  if (e.out.bytes != out0) problems << "backward wrote into out, an input of the backward call\n";
  if (!lse0.empty() && std::memcmp(e.lse.data(), lse0.data(), lse0.size() * sizeof(float)) != 0)
    problems << "backward wrote into lse, an input of the backward call\n";
  if (ge.dout.bytes != dout0) problems << "backward wrote into dout\n";
  auto lq = [&](int64_t b) { return c.lq(b); };
  auto lk = [&](int64_t b) { return c.lk(b); };
  problems << gradient_writes_outside_live("dq", ge.dq, c.batch, c.heads, c.head_dim, lq)
           << gradient_writes_outside_live("dk", ge.dk, c.batch, c.kv_heads, c.head_dim, lk)
           << gradient_writes_outside_live("dv", ge.dv, c.batch, c.kv_heads, c.value_dim, lk);
  const Gradients have = decode_gradients(c, ge);
  int reported = 0;
  auto compare = [&](const char* name, const std::vector<double>& h, const std::vector<double>& w) {
    for (size_t at = 0; at < w.size(); ++at) {
      if (std::isnan(w[at])) continue;  // not live
      if (std::fabs(h[at] - w[at]) <= grad_tolerance(c.dtype, w[at], slack)) continue;
      if (reported++ < 8) problems << name << " element " << at << " = " << h[at] << ", expected " << w[at] << "\n";
    }
  };
  compare("dq", have.dq, want.dq);
  compare("dk", have.dk, want.dk);
  compare("dv", have.dv, want.dv);
  if (reported > 8) problems << "(" << reported - 8 << " more)\n";
  if (got) *got = have;
  return problems.str();
}

// run_backward_on against the central differences of the plugin's own forward.
inline std::string check_backward(const attncheck_impl_v2& impl, const Case& c, const GradCase& g, double slack = 0,
                                  Gradients* got = nullptr) {
  return run_backward_on(impl, c, g, central_differences(impl, c, g.dout), slack, got);
}

}  // namespace v2test

#endif
