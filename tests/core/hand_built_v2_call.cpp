#include "hand_built_v2_call.h"

#include <limits>
#include <stdexcept>

namespace attncheck::testing_v2 {
namespace {

// The shared encoder's layout for one of ours: BHSD {0,1,2,3} or BSHD
// {0,2,1,3}, gap[level] after each step of the axis at that level.
v2test::Layout as_layout(const Layout& l) {
  v2test::Layout out;
  if (l.bshd) {
    out.order = {0, 2, 1, 3};
    out.gap = {l.batch_gap, l.row_gap, l.head_gap};
  } else {
    out.gap = {l.batch_gap, l.head_gap, l.row_gap};
  }
  return out;
}

v2test::Broadcast broadcast_of(const Varies& v) { return {!v.batch, !v.head, !v.row}; }

}  // namespace

TestCall make_test_call(const CallSpec& s, std::mt19937_64& rng) {
  TestCall t;
  t.spec = s;
  v2test::Case& c = t.logical;
  const DTypeInfo& di = info(s.dtype);
  const auto exact = [&](double x) {
    unsigned char bits[8];
    di.encode(x, bits);
    return di.decode(bits);
  };
  std::uniform_real_distribution<double> unit(-1, 1), wide(-2, 2), uniform01(0, 1);
  const int64_t B = s.batch, H = s.heads, G = s.kv_heads, Q = s.q_len, K = s.kv_len;
  c.dtype = static_cast<attncheck_dtype>(s.dtype);
  c.batch = B, c.heads = H, c.kv_heads = G, c.q_len = Q, c.kv_len = K, c.head_dim = s.head_dim, c.value_dim = s.value_dim;
  c.q_lens = s.q_lens, c.kv_lens = s.kv_lens;
  c.causal = s.causal;
  c.window_left = s.window_left, c.window_right = s.window_right;
  c.scale = s.scale, c.softcap = s.softcap;
  c.alibi_slopes = s.alibi_slopes, c.sinks = s.sinks;
  c.want_lse = s.lse;
  c.q_layout = as_layout(s.q), c.k_layout = as_layout(s.k), c.v_layout = as_layout(s.v), c.out_layout = as_layout(s.out);
  // Stored mask and bias rows two entries apart: a kernel must use their stride[2].
  c.mask_layout.gap = c.bias_layout.gap = {0, 0, 2};

  // Logical q, k, v: random in [-1, 1] at live rows and keys, NaN at padding.
  c.q.resize(static_cast<std::size_t>(B * H * Q * s.head_dim));
  c.k.resize(static_cast<std::size_t>(B * G * K * s.head_dim));
  c.v.resize(static_cast<std::size_t>(B * G * K * s.value_dim));
  for (int64_t b = 0; b < B; ++b) {
    // Drawn at padding too (then dropped), so that the same seed gives the
    // same live values whatever the lengths.
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Q; ++i)
        for (int64_t d = 0; d < s.head_dim; ++d) {
          const double x = exact(unit(rng));
          c.q[((b * H + h) * Q + i) * s.head_dim + d] = i < c.lq(b) ? x : kNaN;
        }
    for (int64_t g = 0; g < G; ++g)
      for (int64_t j = 0; j < K; ++j) {
        for (int64_t d = 0; d < s.head_dim; ++d) {
          const double x = exact(unit(rng));
          c.k[((b * G + g) * K + j) * s.head_dim + d] = j < c.lk(b) ? x : kNaN;
        }
        for (int64_t col = 0; col < s.value_dim; ++col) {
          const double x = exact(unit(rng));
          c.v[((b * G + g) * K + j) * s.value_dim + col] = j < c.lk(b) ? x : kNaN;
        }
      }
  }

  // Mask and bias: drawn as stored (once per broadcast axis). An entry only
  // padding reads is left to the encoder (which makes it "attend" and NaN).
  const auto stored_index = [&](const std::array<int64_t, 4>& ext, int64_t b, int64_t h, int64_t i, int64_t j) {
    return static_cast<std::size_t>(((b * ext[1] + h) * ext[2] + i) * ext[3] + j);
  };
  if (s.mask) {
    c.mask_broadcast = broadcast_of(s.mask_varies);
    const auto ext = c.stored_extents(c.mask_broadcast);
    c.mask.assign(static_cast<std::size_t>(ext[0] * ext[1] * ext[2] * ext[3]), 1);
    std::bernoulli_distribution keep(0.8);
    for (uint8_t& m : c.mask) m = keep(rng) ? 1 : 0;
    // A row whose every key is masked (when the mask varies per row, head and batch).
    if (s.mask_varies.batch && s.mask_varies.head && s.mask_varies.row && Q > 1)
      for (int64_t j = 0; j < K; ++j) c.mask[stored_index(ext, 0, H - 1, 1, j)] = 0;
    t.mask.resize(static_cast<std::size_t>(B * H * Q * K));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < Q; ++i)
          for (int64_t j = 0; j < K; ++j) t.mask[((b * H + h) * Q + i) * K + j] = c.mask_at(b, h, i, j) ? 1 : 0;
  }
  if (s.bias) {
    c.bias_broadcast = broadcast_of(s.bias_varies);
    const auto ext = c.stored_extents(c.bias_broadcast);
    c.bias.resize(static_cast<std::size_t>(ext[0] * ext[1] * ext[2] * ext[3]));
    for (double& x : c.bias) x = uniform01(rng) < 0.1 ? -std::numeric_limits<double>::infinity() : exact(wide(rng));
  }

  v2test::encode_call(c, t.enc);
  if (!t.enc.exact) throw std::logic_error("make_test_call: a value does not fit the dtype");
  return t;
}

std::string untouched_outside_live(const TestCall& t) {
  const std::vector<std::string> writes = v2test::writes_outside_live(t.logical, t.enc);
  return writes.empty() ? "" : writes.front();
}

}  // namespace attncheck::testing_v2
