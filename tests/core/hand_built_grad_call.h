// ABI v2 backward calls built by hand for the built-ins' backward tests, on
// top of hand_built_v2_call.h's forward calls and independently of the
// checker's own encoding (problem/call_layout.*, being extended for backward
// elsewhere): a GradCall is a TestCall plus
//   - dout [batch][heads][q_len][value_dim]: random at live rows, NaN at
//     padding rows and in the gaps of its layout;
//   - dq, dk, dv with their own layouts, every byte 0xFF (NaN in every dtype)
//     before each backward call, the live elements optionally prefilled with
//     garbage instead (overwrite semantics);
// and the gradients of sum(out * dout) by central differences of the spec's
// forward (v2test::expected_of, long double) on the logical values.
//
// Example usage:
//   GradCall t = make_grad_call(spec, {}, rng);
//   Grads g = run_forward_backward(t, reference_forward_v2, reference_backward_v2);
//   Grads fd = central_differences(t);   // compare g.dq[n] with fd.dq[n] at live n
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attncheck/plugin_v2.h"
#include "hand_built_v2_call.h"

namespace attncheck::testing_v2 {

struct GradLayouts {
  Layout dout, dq, dk, dv;
};

struct GradCall {
  TestCall fwd;
  std::vector<double> dout;  // logical [batch][heads][q_len][value_dim], NaN at padding rows
  v2test::Placed dout_p, dq_p, dk_p, dv_p;
  attncheck_grad grad{};

  explicit GradCall(TestCall&& forward) : fwd(std::move(forward)) {}
  GradCall(const GradCall&) = delete;  // grad points into the buffers
  GradCall(GradCall&&) = default;
};

// Gradients as doubles, dense: dq [batch][heads][q_len][head_dim], dk
// [batch][kv_heads][kv_len][head_dim], dv [batch][kv_heads][kv_len][value_dim];
// NaN at padding. `problems` lists what went wrong in the call (empty: none).
struct Grads {
  std::vector<double> dq, dk, dv;
  std::string problems;
};

GradCall make_grad_call(const CallSpec& spec, const GradLayouts& layouts, std::mt19937_64& rng);

using ForwardV2 = int (*)(const attncheck_call_v2*, char*, size_t);
using BackwardV2 = int (*)(const attncheck_call_v2*, const attncheck_grad*, char*, size_t);

// The forward (its own out and lse), then backward on them with dq, dk, dv
// poisoned (0xFF) or, with `garbage`, their live elements set to that value.
// Checks: both return OK; backward left q, k, v, mask, bias, dout, out and
// lse byte for byte as they were; every non-live byte of dq, dk, dv is still
// 0xFF. Reports into Grads::problems.
Grads run_forward_backward(GradCall& t, ForwardV2 forward, BackwardV2 backward, const double* garbage = nullptr);

// The gradients by central differences (step h) of sum over live rows of
// out * dout, out from the spec's forward in long double.
Grads central_differences(const GradCall& t, double h = 1e-5);

// d/de sum(out(x + e dir) * dout) at e = 0 by central differences, with `dir`
// [same shape as q, k or v] perturbing that tensor ('q', 'k' or 'v').
double directional_difference(const GradCall& t, char tensor, const std::vector<double>& dir, double h = 1e-5);

}  // namespace attncheck::testing_v2
