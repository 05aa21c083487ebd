// ABI v2 calls built by hand for the built-ins' tests, independently of the
// checker's own encoding (problem/call_layout.*): a CallSpec says what the
// call holds, make_test_call draws its tensors into a v2test::Case and lays
// the call out with the plugins' tests' encoder (tests/support/v2_test_call.h),
// every view with its own axis order and gaps, and what must not matter
// poisoned:
//   - gaps between the elements of input views (the mask's and bias's too), and
//     padding rows and keys of q, k, v, and of the mask and bias: NaN (the
//     mask: 1, "may attend");
//   - every byte of out and lse that is not a live element: 0xFF (NaN),
//     checked afterwards by untouched_outside_live().
// expected_v2() is the spec's formulas of tests/support/v2_spec_case.h
// (long double, straight from the text of include/attncheck/plugin_v2.h).
//
// Example usage:
//   CallSpec s; s.heads = 4; s.kv_heads = 2; s.q_lens = {3, 0};
//   TestCall t = make_test_call(s, rng);
//   int rc = reference_forward_v2(&t.enc.call, err, sizeof err);
//   Expected e = expected_v2(t);  compare t.out_value(b, h, i, c) with e.out[...]
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attncheck/plugin_v2.h"
#include "problem/dtype.h"
#include "v2_test_call.h"

namespace attncheck::testing_v2 {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr unsigned char kSentinel = v2test::kOutputPoison;  // every non-live byte of out and lse

// How one [batch][head][row][col] view lies in memory: BHSD or BSHD, with
// `gap` unused elements after each row, head and batch step.
struct Layout {
  bool bshd = false;  // [batch][row][head][col]
  int64_t row_gap = 0, head_gap = 0, batch_gap = 0;
};

// Which of the axes [batch][head][row] a mask or a bias varies along; the
// others are sent with stride 0.
struct Varies {
  bool batch = true, head = true, row = true;
};

struct CallSpec {
  DType dtype = DType::f32;
  int64_t batch = 2, heads = 4, kv_heads = 4, q_len = 37, kv_len = 75, head_dim = 8, value_dim = 5;
  Layout q, k, v, out;
  attncheck_causal causal = ATTNCHECK_CAUSAL_NONE;
  int64_t window_left = -1, window_right = -1;
  double scale = kNaN, softcap = 0;
  std::vector<int32_t> q_lens, kv_lens;  // empty: none
  bool mask = false;
  Varies mask_varies;
  bool bias = false;
  Varies bias_varies;
  std::vector<float> alibi_slopes, sinks;  // empty: none
  bool lse = false;
};

struct TestCall {
  CallSpec spec;
  // The logical call (values exact in the dtype, NaN at padding; mask and bias
  // as stored, once per broadcast axis) and its encoding: enc.call points into
  // enc's buffers (enc.q, enc.k, enc.v, enc.out, enc.lse).
  v2test::Case logical;
  v2test::Encoded enc;
  std::vector<uint8_t> mask;  // the mask expanded to [batch][heads][q_len][kv_len] (empty: none)

  TestCall() = default;
  TestCall(const TestCall&) = delete;  // a copy's call would point into the original
  TestCall(TestCall&&) = default;      // a moved vector keeps its storage

  int64_t lq(int64_t b) const { return logical.lq(b); }
  int64_t lk(int64_t b) const { return logical.lk(b); }
  // Output element (b, h, i, c) as the call left it.
  double out_value(int64_t b, int64_t h, int64_t i, int64_t c) {
    return v2test::decode(logical.dtype, enc.out.at(b, h, i, c));
  }
  // The call again with fresh output poison (to run another implementation).
  void reset_outputs() { enc.reset_outputs(); }
};

// Draws the tensors of `spec` and lays the call out (see the file comment).
TestCall make_test_call(const CallSpec& spec, std::mt19937_64& rng);

// The spec's results: out [batch][heads][q_len][value_dim] and lse
// [batch][heads][q_len], meaningful at live rows only.
using Expected = v2test::Expected;
inline Expected expected_v2(const TestCall& t) { return v2test::expected_of(t.logical); }

// "" when every byte of out and lse that is not a live element (gaps, padding
// rows) still holds the poison; else what was written.
std::string untouched_outside_live(const TestCall& t);

}  // namespace attncheck::testing_v2
