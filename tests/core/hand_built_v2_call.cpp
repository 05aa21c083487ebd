#include "hand_built_v2_call.h"

#include <algorithm>
#include <sstream>

namespace attncheck::testing_v2 {
namespace {

// Allocates a view of extents {batch, heads, rows, cols} with these strides
// and fills every element slot of its span with `fill` (one encoded element).
Buffer allocate(const std::array<int64_t, 4>& stride, const std::array<int64_t, 4>& extents, std::size_t element,
                const unsigned char* fill) {
  Buffer buf;
  buf.stride = stride;
  buf.element = element;
  int64_t span = 1;
  for (int a = 0; a < 4; ++a) span += (extents[a] - 1) * stride[a];
  buf.bytes.resize(static_cast<std::size_t>(span) * element);
  for (int64_t e = 0; e < span; ++e) std::memcpy(buf.bytes.data() + e * element, fill, element);
  return buf;
}

std::array<int64_t, 4> dense_strides(const std::array<int64_t, 4>& extents, int64_t row_gap) {
  std::array<int64_t, 4> s{0, 0, extents[3] + row_gap, 1};
  s[1] = extents[2] * s[2];
  s[0] = extents[1] * s[1];
  return s;
}

// The view of a Buffer, for the call.
attncheck_view view_of(const Buffer& b) {
  attncheck_view v{};
  v.data = b.bytes.data();
  std::copy(b.stride.begin(), b.stride.end(), v.stride);
  return v;
}

}  // namespace

TestCall make_test_call(const CallSpec& s, std::mt19937_64& rng) {
  TestCall t;
  t.spec = s;
  const DTypeInfo& di = info(s.dtype);
  const auto exact = [&](double x) {
    unsigned char bits[8];
    di.encode(x, bits);
    return di.decode(bits);
  };
  std::uniform_real_distribution<double> unit(-1, 1), wide(-2, 2), uniform01(0, 1);
  const int64_t B = s.batch, H = s.heads, G = s.kv_heads, Q = s.q_len, K = s.kv_len;

  // Logical q, k, v: random in [-1, 1] at live rows and keys, NaN at padding.
  t.q.resize(static_cast<std::size_t>(B * H * Q * s.head_dim));
  t.k.resize(static_cast<std::size_t>(B * G * K * s.head_dim));
  t.v.resize(static_cast<std::size_t>(B * G * K * s.value_dim));
  for (int64_t b = 0; b < B; ++b) {
    // Drawn at padding too (then dropped), so that the same seed gives the
    // same live values whatever the lengths.
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Q; ++i)
        for (int64_t d = 0; d < s.head_dim; ++d) {
          const double x = exact(unit(rng));
          t.q[t.qi(b, h, i, d)] = i < t.lq(b) ? x : kNaN;
        }
    for (int64_t g = 0; g < G; ++g)
      for (int64_t j = 0; j < K; ++j) {
        for (int64_t d = 0; d < s.head_dim; ++d) {
          const double x = exact(unit(rng));
          t.k[t.ki(b, g, j, d)] = j < t.lk(b) ? x : kNaN;
        }
        for (int64_t c = 0; c < s.value_dim; ++c) {
          const double x = exact(unit(rng));
          t.v[t.vi(b, g, j, c)] = j < t.lk(b) ? x : kNaN;
        }
      }
  }

  // Mask and bias: drawn as stored (once per broadcast axis), then expanded.
  // A stored entry that is padding for every (b, i) it serves holds poison.
  const auto stored_extents = [&](const Varies& var) {
    return std::array<int64_t, 4>{var.batch ? B : 1, var.head ? H : 1, var.row ? Q : 1, K};
  };
  const auto live_somewhere = [&](const Varies& var, int64_t sb, int64_t si, int64_t j) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < Q; ++i)
        if ((!var.batch || b == sb) && (!var.row || i == si) && i < t.lq(b) && j < t.lk(b)) return true;
    return false;
  };
  const auto broadcast_strides = [](std::array<int64_t, 4> st, const Varies& var) {
    if (!var.batch) st[0] = 0;
    if (!var.head) st[1] = 0;
    if (!var.row) st[2] = 0;
    return st;
  };
  const std::size_t full = static_cast<std::size_t>(B * H * Q * K);
  if (s.mask) {
    const auto ext = stored_extents(s.mask_varies);
    const unsigned char garbage = 0x01;
    t.mask_buf = allocate(broadcast_strides(dense_strides(ext, 2), s.mask_varies), ext, 1, &garbage);
    std::bernoulli_distribution keep(0.8);
    for (int64_t b = 0; b < ext[0]; ++b)
      for (int64_t h = 0; h < ext[1]; ++h)
        for (int64_t i = 0; i < ext[2]; ++i)
          for (int64_t j = 0; j < K; ++j)
            *static_cast<uint8_t*>(t.mask_buf.at(b, h, i, j)) =
                live_somewhere(s.mask_varies, b, i, j) ? (keep(rng) ? 1 : 0) : 1;
    // A row whose every key is masked (when the mask varies per row, head and batch).
    if (s.mask_varies.batch && s.mask_varies.head && s.mask_varies.row && Q > 1)
      for (int64_t j = 0; j < K; ++j) *static_cast<uint8_t*>(t.mask_buf.at(0, H - 1, 1, j)) = 0;
    t.mask.resize(full);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < Q; ++i)
          for (int64_t j = 0; j < K; ++j) t.mask[t.mi(b, h, i, j)] = *static_cast<uint8_t*>(t.mask_buf.at(b, h, i, j));
  }
  if (s.bias) {
    const auto ext = stored_extents(s.bias_varies);
    unsigned char nan_bits[8];
    di.encode(kNaN, nan_bits);
    t.bias_buf = allocate(broadcast_strides(dense_strides(ext, 2), s.bias_varies), ext, di.bytes, nan_bits);
    for (int64_t b = 0; b < ext[0]; ++b)
      for (int64_t h = 0; h < ext[1]; ++h)
        for (int64_t i = 0; i < ext[2]; ++i)
          for (int64_t j = 0; j < K; ++j) {
            double x = kNaN;
            if (live_somewhere(s.bias_varies, b, i, j)) x = uniform01(rng) < 0.1 ? -kInf : exact(wide(rng));
            di.encode(x, t.bias_buf.at(b, h, i, j));
          }
    t.bias.resize(full);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < Q; ++i)
          for (int64_t j = 0; j < K; ++j) t.bias[t.mi(b, h, i, j)] = di.decode(t.bias_buf.at(b, h, i, j));
  }

  // q, k, v laid out with NaN in every gap; out and lse full of sentinels.
  unsigned char nan_bits[8];
  di.encode(kNaN, nan_bits);
  const auto lay = [&](const Layout& l, int64_t heads, int64_t rows, int64_t cols, const std::vector<double>& values,
                       Buffer& buf) {
    const std::array<int64_t, 4> ext{B, heads, rows, cols};
    buf = allocate(strides_of(l, heads, rows, cols), ext, di.bytes, nan_bits);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) di.encode(values[((b * heads + h) * rows + r) * cols + c], buf.at(b, h, r, c));
  };
  lay(s.q, H, Q, s.head_dim, t.q, t.q_buf);
  lay(s.k, G, K, s.head_dim, t.k, t.k_buf);
  lay(s.v, G, K, s.value_dim, t.v, t.v_buf);
  unsigned char sentinel[8];
  std::memset(sentinel, kSentinel, sizeof sentinel);
  t.out_buf = allocate(strides_of(s.out, H, Q, s.value_dim), {B, H, Q, s.value_dim}, di.bytes, sentinel);
  t.lse_buf.resize(static_cast<std::size_t>(B * H * Q));
  t.reset_outputs();

  attncheck_call_v2& c = t.call;
  c.dtype = static_cast<attncheck_dtype>(s.dtype);
  c.batch = B, c.heads = H, c.kv_heads = G, c.q_len = Q, c.kv_len = K, c.head_dim = s.head_dim, c.value_dim = s.value_dim;
  c.q = view_of(t.q_buf), c.k = view_of(t.k_buf), c.v = view_of(t.v_buf);
  c.out.data = t.out_buf.bytes.data();
  std::copy(t.out_buf.stride.begin(), t.out_buf.stride.end(), c.out.stride);
  c.lse = s.lse ? t.lse_buf.data() : nullptr;
  c.q_lens = s.q_lens.empty() ? nullptr : t.spec.q_lens.data();
  c.kv_lens = s.kv_lens.empty() ? nullptr : t.spec.kv_lens.data();
  c.causal = s.causal;
  c.window_left = s.window_left, c.window_right = s.window_right;
  c.scale = s.scale, c.softcap = s.softcap;
  if (s.mask) c.mask = view_of(t.mask_buf);
  if (s.bias) c.bias = view_of(t.bias_buf);
  c.alibi_slopes = s.alibi_slopes.empty() ? nullptr : t.spec.alibi_slopes.data();
  c.sinks = s.sinks.empty() ? nullptr : t.spec.sinks.data();
  return t;
}

Expected expected_v2(const TestCall& t) {
  const CallSpec& s = t.spec;
  Expected e;
  e.out.assign(static_cast<std::size_t>(s.batch * s.heads * s.q_len * s.value_dim), 0.0);
  e.lse.assign(static_cast<std::size_t>(s.batch * s.heads * s.q_len), 0.0);
  const double scale = std::isnan(s.scale) ? 1.0 / std::sqrt(static_cast<double>(s.head_dim)) : s.scale;
  std::vector<double> z(static_cast<std::size_t>(s.kv_len));
  std::vector<char> in_s(static_cast<std::size_t>(s.kv_len));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t g = h / (s.heads / s.kv_heads);
      const double sink = s.sinks.empty() ? -kInf : s.sinks[h];
      for (int64_t i = 0; i < t.lq(b); ++i) {
        // d_i = i (TOP_LEFT), i + Lk - Lq (BOTTOM_RIGHT and NONE).
        const int64_t d = s.causal == ATTNCHECK_CAUSAL_TOP_LEFT ? i : i + t.lk(b) - t.lq(b);
        double m = sink;
        for (int64_t j = 0; j < s.kv_len; ++j) {
          in_s[j] = j < t.lk(b) && (s.causal == ATTNCHECK_CAUSAL_NONE || j <= d) &&
                    (s.window_left < 0 || j >= d - s.window_left) && (s.window_right < 0 || j <= d + s.window_right) &&
                    (!s.mask || t.mask[t.mi(b, h, i, j)] != 0) && (!s.bias || t.bias[t.mi(b, h, i, j)] != -kInf);
          if (!in_s[j]) continue;
          double dot = 0;
          for (int64_t dd = 0; dd < s.head_dim; ++dd) dot += t.q[t.qi(b, h, i, dd)] * t.k[t.ki(b, g, j, dd)];
          double x = scale * dot;
          if (s.softcap > 0) x = s.softcap * std::tanh(x / s.softcap);
          if (s.bias) x += t.bias[t.mi(b, h, i, j)];
          if (!s.alibi_slopes.empty()) x -= s.alibi_slopes[h] * std::abs(static_cast<double>(d - j));
          z[j] = x;
          m = std::max(m, x);
        }
        const std::size_t row = static_cast<std::size_t>((b * s.heads + h) * s.q_len + i);
        if (m == -kInf) {  // S empty, no sink: out 0, lse -inf
          e.lse[row] = -kInf;
          continue;
        }
        double denominator = std::exp(sink - m);  // 0 without a sink
        for (int64_t j = 0; j < s.kv_len; ++j)
          if (in_s[j]) denominator += std::exp(z[j] - m);
        for (int64_t j = 0; j < s.kv_len; ++j) {
          if (!in_s[j]) continue;
          const double p = std::exp(z[j] - m) / denominator;
          for (int64_t c = 0; c < s.value_dim; ++c) e.out[row * s.value_dim + c] += p * t.v[t.vi(b, g, j, c)];
        }
        e.lse[row] = m + std::log(denominator);
      }
    }
  return e;
}

std::string untouched_outside_live(const TestCall& t) {
  const CallSpec& s = t.spec;
  const std::size_t element = t.out_buf.element;
  std::vector<char> live(t.out_buf.bytes.size(), 0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < t.lq(b); ++i)
        for (int64_t c = 0; c < s.value_dim; ++c) {
          const int64_t at = b * t.out_buf.stride[0] + h * t.out_buf.stride[1] + i * t.out_buf.stride[2] + c;
          std::fill_n(live.begin() + at * static_cast<int64_t>(element), element, 1);
        }
  for (std::size_t k = 0; k < live.size(); ++k)
    if (!live[k] && t.out_buf.bytes[k] != kSentinel) {
      std::ostringstream msg;
      msg << "out byte " << k << " (element " << k / element << ") outside the live elements was written";
      return msg.str();
    }
  const auto* lse_bytes = reinterpret_cast<const unsigned char*>(t.lse_buf.data());
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = s.lse ? t.lq(b) : 0; i < s.q_len; ++i)
        for (std::size_t k = 0; k < sizeof(float); ++k)
          if (lse_bytes[((b * s.heads + h) * s.q_len + i) * sizeof(float) + k] != kSentinel) {
            std::ostringstream msg;
            msg << "lse of padding row (b " << b << ", h " << h << ", i " << i << ") was written";
            return msg.str();
          }
  return "";
}

}  // namespace attncheck::testing_v2
