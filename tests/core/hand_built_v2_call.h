// ABI v2 calls built by hand for the built-ins' tests, independently of the
// checker's own encoding (problem/call_layout.*): a CallSpec says what the
// call holds, make_test_call draws its tensors, lays every view out with its
// own axis order and gaps, and fills what must not matter with poison:
//   - gaps between the elements of input views, and padding rows and keys of
//     q, k, v, and of the mask and bias: NaN (the mask: 1, "may attend");
//   - every byte of out and lse that is not a live element: a sentinel,
//     checked afterwards by untouched_outside_live().
// expected_v2() computes the spec's formulas in double, straight from the
// text of ../shared/spec/plugin-abi-v2.md.
//
// Example usage:
//   CallSpec s; s.heads = 4; s.kv_heads = 2; s.q_lens = {3, 0};
//   TestCall t = make_test_call(s, rng);
//   int rc = reference_forward_v2(&t.call, err, sizeof err);
//   Expected e = expected_v2(t);  compare t.out_value(b, h, i, c) with e.out_at(...)
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

namespace attncheck::testing_v2 {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr unsigned char kSentinel = 0xA5;  // every non-live byte of out and lse

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

// Element strides of a view with extents {batch, heads, rows, cols}, and the
// elements it spans.
inline std::array<int64_t, 4> strides_of(const Layout& l, int64_t heads, int64_t rows, int64_t cols) {
  std::array<int64_t, 4> s{0, 0, 0, 1};
  if (l.bshd) {
    s[1] = cols + l.head_gap;
    s[2] = heads * s[1] + l.row_gap;
    s[0] = rows * s[2] + l.batch_gap;
  } else {
    s[2] = cols + l.row_gap;
    s[1] = rows * s[2] + l.head_gap;
    s[0] = heads * s[1] + l.batch_gap;
  }
  return s;
}

// One laid-out tensor: the bytes the call points at and its strides.
struct Buffer {
  std::vector<unsigned char> bytes;
  std::array<int64_t, 4> stride{};
  std::size_t element = 0;  // bytes per element
  void* at(int64_t b, int64_t h, int64_t r, int64_t c) {
    return bytes.data() + (b * stride[0] + h * stride[1] + r * stride[2] + c) * element;
  }
};

struct TestCall {
  CallSpec spec;
  // Logical tensors, values exact in the dtype (NaN at padding):
  //   q [batch][heads][q_len][head_dim], k [batch][kv_heads][kv_len][head_dim],
  //   v [batch][kv_heads][kv_len][value_dim], mask and bias [batch][heads][q_len][kv_len] (expanded).
  std::vector<double> q, k, v, bias;
  std::vector<uint8_t> mask;
  Buffer q_buf, k_buf, v_buf, out_buf, mask_buf, bias_buf;
  std::vector<float> lse_buf;  // [batch][heads][q_len], sentinel bytes outside live rows
  attncheck_call_v2 call{};  // points into the buffers above

  TestCall() = default;
  TestCall(const TestCall&) = delete;  // a copy's call would point into the original
  TestCall(TestCall&&) = default;      // a moved vector keeps its storage

  int64_t lq(int64_t b) const { return spec.q_lens.empty() ? spec.q_len : spec.q_lens[b]; }
  int64_t lk(int64_t b) const { return spec.kv_lens.empty() ? spec.kv_len : spec.kv_lens[b]; }
  int64_t qi(int64_t b, int64_t h, int64_t i, int64_t d) const {
    return ((b * spec.heads + h) * spec.q_len + i) * spec.head_dim + d;
  }
  int64_t ki(int64_t b, int64_t g, int64_t j, int64_t d) const {
    return ((b * spec.kv_heads + g) * spec.kv_len + j) * spec.head_dim + d;
  }
  int64_t vi(int64_t b, int64_t g, int64_t j, int64_t c) const {
    return ((b * spec.kv_heads + g) * spec.kv_len + j) * spec.value_dim + c;
  }
  int64_t mi(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return ((b * spec.heads + h) * spec.q_len + i) * spec.kv_len + j;
  }
  // Output element (b, h, i, c) as the call left it.
  double out_value(int64_t b, int64_t h, int64_t i, int64_t c) {
    return info(spec.dtype).decode(out_buf.at(b, h, i, c));
  }
  // The call again with fresh output sentinels (to run another implementation).
  void reset_outputs() {
    std::fill(out_buf.bytes.begin(), out_buf.bytes.end(), kSentinel);
    std::memset(lse_buf.data(), kSentinel, lse_buf.size() * sizeof(float));
  }
};

// Draws the tensors of `spec` and lays the call out (see the file comment).
TestCall make_test_call(const CallSpec& spec, std::mt19937_64& rng);

// The spec's results in double: out [batch][heads][q_len][value_dim] and lse
// [batch][heads][q_len], meaningful at live rows only.
struct Expected {
  std::vector<double> out, lse;
};
Expected expected_v2(const TestCall& t);

// "" when every byte of out and lse that is not a live element (gaps, padding
// rows) still holds the sentinel; else where the first one does not.
std::string untouched_outside_live(const TestCall& t);

}  // namespace attncheck::testing_v2
