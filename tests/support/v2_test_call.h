// A v2test::Case laid out as an attncheck_call_v2, the way the checker's promises
// allow a caller to lay it out, and the check of what a plugin wrote; shared by the
// plugins' direct tests (tests/plugins) and the built-ins' (tests/core):
//   - q, k, v, out through their Layout (axis order, gaps, lead room), the stored
//     mask and bias through theirs (gaps, stride 0 on broadcast axes);
//   - every input element that is not live (gaps, padding rows and keys) is NaN, and
//     mask and bias entries at padding and in gaps are "attend" and NaN, so that a
//     read leaks;
//   - every byte of out and lse is 0xFF before the call (NaN in every dtype), and every
//     one that is not a live element must still be 0xFF after it.
#ifndef ATTNCHECK_TESTS_V2_TEST_CALL_H
#define ATTNCHECK_TESTS_V2_TEST_CALL_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "v2_spec_case.h"

namespace v2test {

inline constexpr unsigned char kOutputPoison = 0xFF;  // every byte of out and lse before a call

inline size_t element_size(attncheck_dtype t) {
  return t == ATTNCHECK_F64 ? 8 : t == ATTNCHECK_F32 ? 4 : 2;
}

// The bits of x in dtype t; x must be exactly representable (the tests draw such
// values), else the test itself is wrong: `exact` is cleared.
inline void encode(attncheck_dtype t, double x, unsigned char* to, bool& exact) {
  if (t == ATTNCHECK_F64) {
    std::memcpy(to, &x, 8);
    return;
  }
  const float f = static_cast<float>(x);
  if (!std::isnan(x) && static_cast<double>(f) != x) exact = false;
  uint32_t fbits;
  std::memcpy(&fbits, &f, 4);
  if (t == ATTNCHECK_F32) {
    std::memcpy(to, &f, 4);
    return;
  }
  uint16_t h;
  if (t == ATTNCHECK_BF16) {  // the upper half of the float
    if (!std::isnan(x) && (fbits & 0xFFFFu) != 0) exact = false;
    h = std::isnan(x) ? 0x7FC0 : static_cast<uint16_t>(fbits >> 16);
  } else if (std::isnan(x)) {
    h = 0x7E00;
  } else if (std::isinf(x)) {
    h = x > 0 ? 0x7C00 : 0xFC00;
  } else if (x == 0) {
    h = std::signbit(x) ? 0x8000 : 0;
  } else if (std::fabs(x) < std::ldexp(1.0, -14)) {  // f16 subnormal: |x| = m 2^-24
    const double m = std::ldexp(std::fabs(x), 24);
    if (m != std::floor(m)) exact = false;
    h = static_cast<uint16_t>((x < 0 ? 0x8000 : 0) | static_cast<int>(m));
  } else {  // normal f16: sign, 5 exponent bits (bias 15), 10 mantissa bits
    int e;
    const double m = std::frexp(std::fabs(x), &e);  // |x| = m 2^e, m in [0.5, 1)
    const double mantissa = (m * 2 - 1) * 1024;
    if (e - 1 < -14 || e - 1 > 15 || mantissa != std::floor(mantissa)) exact = false;
    h = static_cast<uint16_t>((x < 0 ? 0x8000 : 0) | ((e - 1 + 15) << 10) | static_cast<int>(mantissa));
  }
  std::memcpy(to, &h, 2);
}

inline double decode(attncheck_dtype t, const unsigned char* from) {
  if (t == ATTNCHECK_F64) {
    double d;
    std::memcpy(&d, from, 8);
    return d;
  }
  if (t == ATTNCHECK_F32) {
    float f;
    std::memcpy(&f, from, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, from, 2);
  if (t == ATTNCHECK_BF16) {
    const uint32_t fbits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &fbits, 4);
    return f;
  }
  const int e = (h >> 10) & 31, m = h & 1023;
  const double sign = (h & 0x8000) ? -1 : 1;
  if (e == 31) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(m + 1024, e - 25);
}

// One view's memory: its strides under a Layout, and the allocation.
struct Placed {
  std::vector<unsigned char> bytes;
  int64_t stride[4] = {0, 0, 0, 0};
  int64_t lead = 0;
  size_t elem = 0;
  unsigned char* first() { return bytes.data() + lead * elem; }
  int64_t offset(int64_t b, int64_t h, int64_t r, int64_t c) const {
    return b * stride[0] + h * stride[1] + r * stride[2] + c * stride[3];
  }
  unsigned char* at(int64_t b, int64_t h, int64_t r, int64_t c) { return first() + offset(b, h, r, c) * elem; }
};

inline Placed place(const Layout& l, const std::array<int64_t, 4>& extent, size_t elem) {
  Placed p;
  p.elem = elem;
  p.lead = l.lead;
  p.stride[l.order[3]] = 1;
  for (int level = 2; level >= 0; --level)
    p.stride[l.order[level]] = p.stride[l.order[level + 1]] * extent[l.order[level + 1]] + l.gap[level];
  const int64_t span = p.stride[l.order[0]] * extent[l.order[0]];
  p.bytes.assign(static_cast<size_t>(span + 2 * l.lead) * elem, 0);
  return p;
}

// Fills every element of p with NaN of dtype t (the input poison).
inline void fill_nan(Placed& p, attncheck_dtype t) {
  bool exact = true;
  for (size_t at = 0; at < p.bytes.size(); at += p.elem) encode(t, NAN, p.bytes.data() + at, exact);
}

// The call and every buffer it points into.
struct Encoded {
  Placed q, k, v, out;
  Placed mask;  // stored [batch'][heads'][q_len'][kv_len], one byte an entry
  Placed bias;  // stored as the mask, in the dtype
  std::vector<float> lse;
  std::vector<int32_t> q_lens, kv_lens;
  std::vector<float> alibi, sinks;
  attncheck_call_v2 call{};
  bool exact = true;  // every value fit its dtype

  Encoded() = default;
  Encoded(const Encoded&) = delete;  // a copy's call would point into the original
  Encoded(Encoded&&) = default;      // a moved vector keeps its storage
  // Poisons out and lse again (to call another implementation on the same inputs).
  void reset_outputs() {
    std::fill(out.bytes.begin(), out.bytes.end(), kOutputPoison);
    if (!lse.empty()) std::memset(lse.data(), kOutputPoison, lse.size() * sizeof(float));
  }
};

// The view of a stored mask or bias: its placed strides, 0 on broadcast axes.
inline attncheck_view broadcast_view(Placed& p, const Broadcast& br) {
  attncheck_view v{};
  v.data = p.first();
  for (int a = 0; a < 4; ++a) v.stride[a] = p.stride[a];
  if (br.batch) v.stride[0] = 0;
  if (br.head) v.stride[1] = 0;
  if (br.row) v.stride[2] = 0;
  return v;
}

// A stored mask or bias entry is padding when every logical entry it stands for is at
// a padding row or key.
inline bool stored_entry_is_padding(const Case& c, const Broadcast& br, int64_t sb, int64_t sh, int64_t si, int64_t j) {
  (void)sh;
  for (int64_t b = br.batch ? 0 : sb; b <= (br.batch ? c.batch - 1 : sb); ++b)
    for (int64_t i = br.row ? 0 : si; i <= (br.row ? c.q_len - 1 : si); ++i)
      if (i < c.lq(b) && j < c.lk(b)) return false;
  return true;
}

// Encoded is self-referential (call points into its buffers): build it in place.
inline void encode_call(const Case& c, Encoded& e) {
  const attncheck_dtype t = c.dtype;
  const size_t es = element_size(t);
  e.q = place(c.q_layout, {c.batch, c.heads, c.q_len, c.head_dim}, es);
  e.k = place(c.k_layout, {c.batch, c.kv_heads, c.kv_len, c.head_dim}, es);
  e.v = place(c.v_layout, {c.batch, c.kv_heads, c.kv_len, c.value_dim}, es);
  e.out = place(c.out_layout, {c.batch, c.heads, c.q_len, c.value_dim}, es);
  fill_nan(e.q, t);
  fill_nan(e.k, t);
  fill_nan(e.v, t);
  std::fill(e.out.bytes.begin(), e.out.bytes.end(), kOutputPoison);
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.lq(b); ++i)
        for (int64_t d = 0; d < c.head_dim; ++d) encode(t, c.q_at(b, h, i, d), e.q.at(b, h, i, d), e.exact);
    for (int64_t g = 0; g < c.kv_heads; ++g)
      for (int64_t j = 0; j < c.lk(b); ++j) {
        for (int64_t d = 0; d < c.head_dim; ++d) encode(t, c.k_at(b, g, j, d), e.k.at(b, g, j, d), e.exact);
        for (int64_t col = 0; col < c.value_dim; ++col) encode(t, c.v_at(b, g, j, col), e.v.at(b, g, j, col), e.exact);
      }
  }
  attncheck_call_v2& call = e.call;
  call = attncheck_call_v2{};
  call.dtype = t;
  call.batch = c.batch;
  call.heads = c.heads;
  call.kv_heads = c.kv_heads;
  call.q_len = c.q_len;
  call.kv_len = c.kv_len;
  call.head_dim = c.head_dim;
  call.value_dim = c.value_dim;
  call.q.data = e.q.first();
  call.k.data = e.k.first();
  call.v.data = e.v.first();
  call.out.data = e.out.first();
  for (int a = 0; a < 4; ++a) {
    call.q.stride[a] = e.q.stride[a];
    call.k.stride[a] = e.k.stride[a];
    call.v.stride[a] = e.v.stride[a];
    call.out.stride[a] = e.out.stride[a];
  }
  if (c.want_lse) {
    e.lse.assign(static_cast<size_t>(c.batch * c.heads * c.q_len), 0.0f);
    std::memset(e.lse.data(), kOutputPoison, e.lse.size() * sizeof(float));
    call.lse = e.lse.data();
  }
  e.q_lens = c.q_lens;
  e.kv_lens = c.kv_lens;
  call.q_lens = e.q_lens.empty() ? nullptr : e.q_lens.data();
  call.kv_lens = e.kv_lens.empty() ? nullptr : e.kv_lens.data();
  call.causal = c.causal;
  call.window_left = c.window_left;
  call.window_right = c.window_right;
  call.scale = c.scale;
  call.softcap = c.softcap;
  if (!c.mask.empty()) {
    const auto ext = c.stored_extents(c.mask_broadcast);
    e.mask = place(c.mask_layout, ext, 1);
    std::fill(e.mask.bytes.begin(), e.mask.bytes.end(), 1);  // gaps: "attend"
    for (int64_t sb = 0; sb < ext[0]; ++sb)
      for (int64_t sh = 0; sh < ext[1]; ++sh)
        for (int64_t si = 0; si < ext[2]; ++si)
          for (int64_t j = 0; j < ext[3]; ++j) {
            const bool pad = stored_entry_is_padding(c, c.mask_broadcast, sb, sh, si, j);
            // At padding "attend": a read attends a NaN key.
            *e.mask.at(sb, sh, si, j) = pad ? 1 : c.mask[((sb * ext[1] + sh) * ext[2] + si) * ext[3] + j];
          }
    call.mask = broadcast_view(e.mask, c.mask_broadcast);
  }
  if (!c.bias.empty()) {
    const auto ext = c.stored_extents(c.bias_broadcast);
    e.bias = place(c.bias_layout, ext, es);
    fill_nan(e.bias, t);
    for (int64_t sb = 0; sb < ext[0]; ++sb)
      for (int64_t sh = 0; sh < ext[1]; ++sh)
        for (int64_t si = 0; si < ext[2]; ++si)
          for (int64_t j = 0; j < ext[3]; ++j) {
            const bool pad = stored_entry_is_padding(c, c.bias_broadcast, sb, sh, si, j);
            encode(t, pad ? NAN : c.bias[((sb * ext[1] + sh) * ext[2] + si) * ext[3] + j], e.bias.at(sb, sh, si, j),
                   e.exact);
          }
    call.bias = broadcast_view(e.bias, c.bias_broadcast);
  }
  e.alibi = c.alibi_slopes;
  e.sinks = c.sinks;
  call.alibi_slopes = e.alibi.empty() ? nullptr : e.alibi.data();
  call.sinks = e.sinks.empty() ? nullptr : e.sinks.data();
}

// Half a unit in the last place, relative, of dtype t: the one rounding of the store.
inline double half_ulp(attncheck_dtype t) {
  switch (t) {
    case ATTNCHECK_F64: return std::ldexp(1.0, -53);
    case ATTNCHECK_F32: return std::ldexp(1.0, -24);
    case ATTNCHECK_F16: return std::ldexp(1.0, -11);
    case ATTNCHECK_BF16: return std::ldexp(1.0, -8);
  }
  return 1;
}

// Allowed |written - expected|: the store's rounding, plus the difference between two
// double evaluations (a few 1e-15 of values of order 1), plus f16's subnormal spacing.
inline double tolerance(attncheck_dtype t, double expected) {
  const double floor = t == ATTNCHECK_F16 ? std::ldexp(1.0, -25) : 0.0;
  return half_ulp(t) * std::fabs(expected) + 1e-13 * (1 + std::fabs(expected)) + floor;
}

inline bool close(double got, double want, double tol) {
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol;
}

// Every write outside the live elements, one line each (empty: none): bytes of out's
// allocation that are not a live element (gaps, padding rows, lead room) and lse
// entries of padding rows that no longer hold kOutputPoison.
inline std::vector<std::string> writes_outside_live(const Case& c, const Encoded& e) {
  std::vector<std::string> lines;
  std::vector<bool> live(e.out.bytes.size() / e.out.elem, false);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.lq(b); ++i)
        for (int64_t col = 0; col < c.value_dim; ++col)
          live[static_cast<size_t>(e.out.lead + e.out.offset(b, h, i, col))] = true;
  for (size_t el = 0; el < live.size(); ++el) {
    if (live[el]) continue;
    for (size_t byte = 0; byte < e.out.elem; ++byte)
      if (e.out.bytes[el * e.out.elem + byte] != kOutputPoison) {
        lines.push_back("out: element " + std::to_string(el) + " of the allocation is not live and was written");
        break;
      }
  }
  if (c.want_lse)
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t i = c.lq(b); i < c.q_len; ++i) {
          const size_t row = static_cast<size_t>((b * c.heads + h) * c.q_len + i);
          const auto* bytes = reinterpret_cast<const unsigned char*>(&e.lse[row]);
          if (std::any_of(bytes, bytes + sizeof(float), [](unsigned char x) { return x != kOutputPoison; }))
            lines.push_back("lse of padding row " + std::to_string(row) + " was written");
        }
  return lines;
}

// Every mismatch between what the plugin wrote and what the spec says, as text
// (empty: all is well): live out and lse elements against `want`, every other byte of
// out and lse still kOutputPoison (writes_outside_live). `slack` widens the tolerance by slack * (1 + |expected|), for
// a plugin that computes in its dtype rather than rounding once (0 for the example).
inline std::string check_written(const Case& c, Encoded& e, const Expected& want, double slack = 0) {
  std::ostringstream problems;
  int reported = 0;
  auto report = [&](const std::string& line) {
    if (reported++ < 8) problems << line << "\n";
  };
  for (const std::string& line : writes_outside_live(c, e)) report(line);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.lq(b); ++i)
        for (int64_t col = 0; col < c.value_dim; ++col) {
          const double got = decode(c.dtype, e.out.at(b, h, i, col));
          const double w = want.out[((b * c.heads + h) * c.q_len + i) * c.value_dim + col];
          if (!close(got, w, tolerance(c.dtype, w) + slack * (1 + std::fabs(w)))) {
            std::ostringstream s;
            s << "out[" << b << "][" << h << "][" << i << "][" << col << "] = " << got << ", expected " << w;
            report(s.str());
          }
        }
  if (c.want_lse)
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t i = 0; i < c.lq(b); ++i) {
          const size_t row = static_cast<size_t>((b * c.heads + h) * c.q_len + i);
          const double w = want.lse[row];
          if (!close(e.lse[row], w, tolerance(ATTNCHECK_F32, w) + slack * (1 + std::fabs(w)))) {
            std::ostringstream s;
            s << "lse[" << b << "][" << h << "][" << i << "] = " << e.lse[row] << ", expected " << w;
            report(s.str());
          }
        }
  if (reported > 8) problems << "(" << reported - 8 << " more)\n";
  return problems.str();
}

}  // namespace v2test

#endif
