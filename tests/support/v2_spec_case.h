// One ABI-v2 forward call held as logical doubles, and the spec's formulas
// (docs/abi/plugin-abi-v2.md, "Visibility" and "Logits") computed on it straight, in long
// double without max subtraction: the expected answer for the plugins' direct tests
// (tests/plugins: example_v2_plugin_test, torch_v2_adapter_test) and the built-ins'
// v2 tests (tests/core/hand_built_v2_call.h). Independent of src/ on purpose: it
// checks a plugin, and the built-ins, apart from the checker's own code.
#ifndef ATTNCHECK_TESTS_V2_SPEC_CASE_H
#define ATTNCHECK_TESTS_V2_SPEC_CASE_H

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "attncheck/plugin_v2.h"

namespace v2test {

// Where a view's elements lie in memory: `order` lists the axes from outermost to
// innermost (the column axis 3 always last), `gap[l]` adds that many elements after
// each run of level l + 1 (gap[2]: after every row of columns), and `lead` elements
// come before the first element and after the last. {0,1,2,3} with no gaps is dense.
struct Layout {
  std::array<int, 4> order{0, 1, 2, 3};
  std::array<int64_t, 3> gap{0, 0, 0};
  int64_t lead = 0;
};

// [batch][row][head][col] with gaps between rows and heads: the FlashAttention layout,
// padded.
inline Layout bshd_padded() { return Layout{{0, 2, 1, 3}, {2, 1, 3}, 3}; }

// A broadcast tensor (mask or bias) is stored with extent 1 on its broadcast axes.
struct Broadcast {
  bool batch = false, head = false, row = false;
};

struct Case {
  attncheck_dtype dtype = ATTNCHECK_F32;
  int64_t batch = 1, heads = 1, kv_heads = 1, q_len = 1, kv_len = 1, head_dim = 1, value_dim = 1;
  std::vector<double> q;  // [batch][heads][q_len][head_dim]
  std::vector<double> k;  // [batch][kv_heads][kv_len][head_dim]
  std::vector<double> v;  // [batch][kv_heads][kv_len][value_dim]
  std::vector<uint8_t> mask;  // [batch'][heads'][q_len'][kv_len], ' = 1 where broadcast; empty: none
  Broadcast mask_broadcast;
  std::vector<double> bias;  // as mask, in the dtype or -inf; empty: none
  Broadcast bias_broadcast;
  std::vector<int32_t> q_lens, kv_lens;  // [batch] or empty
  attncheck_causal causal = ATTNCHECK_CAUSAL_NONE;
  int64_t window_left = -1, window_right = -1;
  double scale = NAN;
  double softcap = 0;
  std::vector<float> alibi_slopes, sinks;  // [heads] or empty
  bool want_lse = false;
  Layout q_layout, k_layout, v_layout, out_layout;
  // How the stored mask and bias lie: `gap` and `lead` as for a view (the order
  // stays [batch'][heads'][q_len'][kv_len]); broadcast axes get stride 0.
  Layout mask_layout, bias_layout;

  int64_t lq(int64_t b) const { return q_lens.empty() ? q_len : q_lens[b]; }
  int64_t lk(int64_t b) const { return kv_lens.empty() ? kv_len : kv_lens[b]; }
  int64_t kv_head_of(int64_t h) const { return h / (heads / kv_heads); }
  double q_at(int64_t b, int64_t h, int64_t i, int64_t d) const { return q[((b * heads + h) * q_len + i) * head_dim + d]; }
  double k_at(int64_t b, int64_t g, int64_t j, int64_t d) const { return k[((b * kv_heads + g) * kv_len + j) * head_dim + d]; }
  double v_at(int64_t b, int64_t g, int64_t j, int64_t c) const { return v[((b * kv_heads + g) * kv_len + j) * value_dim + c]; }
  // Extents of the stored mask or bias: 1 on a broadcast axis.
  std::array<int64_t, 4> stored_extents(const Broadcast& br) const {
    return {br.batch ? 1 : batch, br.head ? 1 : heads, br.row ? 1 : q_len, kv_len};
  }
  int64_t stored_index(const Broadcast& br, int64_t b, int64_t h, int64_t i, int64_t j) const {
    const auto e = stored_extents(br);
    return ((((br.batch ? 0 : b) * e[1]) + (br.head ? 0 : h)) * e[2] + (br.row ? 0 : i)) * e[3] + j;
  }
  bool mask_at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return mask.empty() || mask[stored_index(mask_broadcast, b, h, i, j)] != 0;
  }
  double bias_at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return bias.empty() ? 0.0 : bias[stored_index(bias_broadcast, b, h, i, j)];
  }
};

// What the spec says the call computes, for existing rows only.
struct Expected {
  std::vector<double> out;  // [batch][heads][q_len][value_dim]; padding rows unused
  std::vector<double> lse;  // [batch][heads][q_len]
};

// The spec's d_i.
inline int64_t diagonal(const Case& c, int64_t b, int64_t i) {
  return c.causal == ATTNCHECK_CAUSAL_TOP_LEFT ? i : i + c.lk(b) - c.lq(b);
}

// The spec's visibility rule, one clause per line.
inline bool visible(const Case& c, int64_t b, int64_t h, int64_t i, int64_t j) {
  const int64_t d = diagonal(c, b, i);
  return j < c.lk(b) &&
         (c.causal == ATTNCHECK_CAUSAL_NONE || j <= d) &&
         (c.window_left < 0 || j >= d - c.window_left) &&
         (c.window_right < 0 || j <= d + c.window_right) &&
         c.mask_at(b, h, i, j) &&
         c.bias_at(b, h, i, j) != -INFINITY;
}

inline Expected expected_of(const Case& c) {
  Expected e;
  e.out.assign(static_cast<size_t>(c.batch * c.heads * c.q_len * c.value_dim), 0.0);
  e.lse.assign(static_cast<size_t>(c.batch * c.heads * c.q_len), 0.0);
  const double scale = std::isnan(c.scale) ? 1.0 / std::sqrt(static_cast<double>(c.head_dim)) : c.scale;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.lq(b); ++i) {
        const int64_t g = c.kv_head_of(h), d_i = diagonal(c, b, i);
        // exp(z_j) of the visible keys, and exp(s).
        std::vector<long double> ez(static_cast<size_t>(c.kv_len), 0.0L);
        long double denominator = c.sinks.empty() ? 0.0L : std::exp(static_cast<long double>(c.sinks[h]));
        bool any = false;
        for (int64_t j = 0; j < c.kv_len; ++j) {
          if (!visible(c, b, h, i, j)) continue;
          long double dot = 0;
          for (int64_t d = 0; d < c.head_dim; ++d)
            dot += static_cast<long double>(c.q_at(b, h, i, d)) * c.k_at(b, g, j, d);
          long double z = scale * dot;
          if (c.softcap > 0) z = c.softcap * std::tanh(z / c.softcap);
          z += c.bias_at(b, h, i, j);
          if (!c.alibi_slopes.empty()) z -= static_cast<long double>(c.alibi_slopes[h]) * std::llabs(d_i - j);
          ez[j] = std::exp(z);
          denominator += ez[j];
          any = true;
        }
        const int64_t row = (b * c.heads + h) * c.q_len + i;
        if (!any) {  // out 0 (already), lse = s or -inf
          e.lse[row] = c.sinks.empty() ? -INFINITY : c.sinks[h];
          continue;
        }
        for (int64_t col = 0; col < c.value_dim; ++col) {
          long double acc = 0;
          for (int64_t j = 0; j < c.kv_len; ++j)
            if (visible(c, b, h, i, j)) acc += ez[j] / denominator * c.v_at(b, g, j, col);
          e.out[row * c.value_dim + col] = static_cast<double>(acc);
        }
        e.lse[row] = static_cast<double>(std::log(denominator));
      }
  return e;
}

}  // namespace v2test

#endif
