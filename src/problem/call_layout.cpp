#include "problem/call_layout.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

namespace attncheck {

namespace {

std::size_t align_up(std::size_t n) {
  return (n + CallLayout::kAlign - 1) / CallLayout::kAlign * CallLayout::kAlign;
}

// The dtype's signalling-NaN marker: arithmetic only ever returns quiet NaNs,
// so a surviving marker means the element was never written.
static_assert(std::endian::native == std::endian::little, "poison_bits are stored little-endian");

void poison(DType t, uint8_t* dst, int64_t n) {
  const DTypeInfo& d = info(t);
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + d.bytes * i, &d.poison_bits, d.bytes);  // little-endian
}

bool is_poison(DType t, const uint8_t* src) {
  const DTypeInfo& d = info(t);
  return std::memcmp(src, &d.poison_bits, d.bytes) == 0;
}

uint8_t guard_byte(std::size_t i) { return static_cast<uint8_t>(0xA5 ^ (i * 131)); }

// The guard pattern once, so guards are written and checked with memcpy/memcmp:
// a byte loop costs 4096 traced comparisons per call under coverage instrumentation.
const uint8_t* guard_pattern() {
  static const auto pattern = [] {
    std::array<uint8_t, CallLayout::kGuardBytes> g{};
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = guard_byte(i);
    return g;
  }();
  return pattern.data();
}

void fill_guard(uint8_t* dst, std::size_t n) {
  for (std::size_t at = 0; at < n; at += CallLayout::kGuardBytes)
    std::memcpy(dst + at, guard_pattern(), std::min(CallLayout::kGuardBytes, n - at));
}

// Index of the first changed guard byte, or -1.
long first_changed_guard(const uint8_t* g) {
  if (std::memcmp(g, guard_pattern(), CallLayout::kGuardBytes) == 0) return -1;
  for (std::size_t i = 0; i < CallLayout::kGuardBytes; ++i)
    if (g[i] != guard_byte(i)) return static_cast<long>(i);
  return -1;
}

using Extents = std::array<int64_t, 4>;

Extents q_extents(const Shape& s) { return {s.batch, s.heads, s.q_len, s.head_dim}; }
Extents k_extents(const Shape& s) { return {s.batch, s.kv_head_count(), s.kv_len, s.head_dim}; }
Extents v_extents(const Shape& s) { return {s.batch, s.kv_head_count(), s.kv_len, s.value_dim}; }
Extents out_extents(const Shape& s) { return {s.batch, s.heads, s.q_len, s.value_dim}; }

bool has_gaps(const TensorLayout& l) { return l.gap[0] > 0 || l.gap[1] > 0 || l.gap[2] > 0; }

// Strides of a compactly stored [batch][heads][q_len][kv_len] tensor, 0 on
// broadcast axes (a v1 call always gets the full tensor).
void broadcast_strides(const Shape& s, const Broadcast& how, int64_t* stride) {
  const int64_t rows = how.per_row ? s.q_len : 1, heads = how.per_head ? s.heads : 1;
  stride[3] = 1;
  stride[2] = how.per_row ? s.kv_len : 0;
  stride[1] = how.per_head ? rows * s.kv_len : 0;
  stride[0] = how.per_batch ? heads * rows * s.kv_len : 0;
}

// Writes a logically row-major [e0][e1][e2][e3] tensor through strides; the
// bytes of the span that hold no element get a NaN of the dtype first.
void encode_view(DType t, const std::vector<double>& src, const Extents& e, const int64_t* stride,
                 bool gaps, std::size_t span_bytes, uint8_t* dst) {
  const std::size_t b = dtype_bytes(t);
  if (gaps) {
    uint8_t nan[8];
    encode_element(t, std::numeric_limits<double>::quiet_NaN(), nan);
    for (std::size_t at = 0; at + b <= span_bytes; at += b) std::memcpy(dst + at, nan, b);
  }
  std::size_t i = 0;
  for (int64_t x = 0; x < e[0]; ++x)
    for (int64_t y = 0; y < e[1]; ++y)
      for (int64_t r = 0; r < e[2]; ++r) {
        uint8_t* row = dst + b * static_cast<std::size_t>(x * stride[0] + y * stride[1] + r * stride[2]);
        for (int64_t c = 0; c < e[3]; ++c, ++i) encode_element(t, src[i], row + c * b);
      }
}

// One output view: where its live elements are. Rows r >= live_rows(b) are
// padding (guard bytes, like the gaps).
struct OutputView {
  std::size_t offset, span_bytes, element_bytes;
  Extents extents;
  int64_t stride[4];
  bool all_live;  // no gaps and no padding rows: the span is exactly the elements
};

template <class RowFn>
void for_each_live_row(const Problem& p, const OutputView& view, RowFn&& fn) {
  for (int64_t b = 0; b < view.extents[0]; ++b)
    for (int64_t h = 0; h < view.extents[1]; ++h)
      for (int64_t r = 0; r < p.q_len_of(b); ++r)
        fn(b, h, r, static_cast<std::size_t>(b * view.stride[0] + h * view.stride[1] + r * view.stride[2]) *
                        view.element_bytes);
}

OutputView out_view(const Problem& p, const CallLayout& l) {
  OutputView v{l.out, l.out_bytes, dtype_bytes(p.dtype), out_extents(p.shape), {}, false};
  std::copy(l.out_stride, l.out_stride + 4, v.stride);
  v.all_live = !has_gaps(p.layouts.out) && p.q_lens.empty();
  return v;
}

OutputView lse_view(const Problem& p, const CallLayout& l) {
  const Shape& s = p.shape;
  return {l.lse, l.lse_bytes, sizeof(float), {s.batch, s.heads, s.q_len, 1},
          {s.heads * s.q_len, s.q_len, 1, 1}, p.q_lens.empty()};
}

// Guards every non-live byte of the span and poisons every live element.
void prepare_output(const Problem& p, const OutputView& view, DType t, uint8_t* base) {
  uint8_t* span = base + view.offset;
  if (!view.all_live) fill_guard(span, view.span_bytes);
  for_each_live_row(p, view, [&](int64_t, int64_t, int64_t, std::size_t at) {
    poison(t, span + at, view.extents[3]);
  });
}

// Which element slot a byte of an output span is, said for a report.
std::string describe_span_byte(const Problem& p, const OutputView& view, std::size_t at) {
  int64_t e = static_cast<int64_t>(at / view.element_bytes);
  std::array<int, 4> axes{0, 1, 2, 3};
  std::sort(axes.begin(), axes.end(), [&](int a, int b) { return view.stride[a] > view.stride[b]; });
  std::array<int64_t, 4> idx{};
  static const char* names[] = {"batch", "head", "row", "column"};
  for (int a : axes) {
    idx[a] = e / view.stride[a];
    e %= view.stride[a];
    if (idx[a] >= view.extents[a])
      return std::string("a gap after the last ") + names[a] + " of its view";
  }
  std::ostringstream os;
  os << "the padding row [b=" << idx[0] << "][h=" << idx[1] << "][i=" << idx[2] << "] (q_lens[" << idx[0]
     << "] = " << p.q_len_of(idx[0]) << ")";
  return os.str();
}

// Checks the non-live bytes of an output span; "" when untouched.
std::string changed_non_live(const Problem& p, const OutputView& view, const char* name, const uint8_t* base) {
  if (view.all_live) return "";
  const uint8_t* span = base + view.offset;
  std::vector<uint8_t> expected(view.span_bytes);
  fill_guard(expected.data(), expected.size());
  const std::size_t row_bytes = view.element_bytes * static_cast<std::size_t>(view.extents[3]);
  for_each_live_row(p, view, [&](int64_t, int64_t, int64_t, std::size_t at) {
    std::memcpy(expected.data() + at, span + at, row_bytes);
  });
  if (std::memcmp(expected.data(), span, expected.size()) == 0) return "";
  std::size_t at = 0;
  while (expected[at] == span[at]) ++at;
  std::ostringstream os;
  os << "wrote into " << name << "'s allocation outside its elements (byte " << at << ", "
     << describe_span_byte(p, view, at) << ")";
  return os.str();
}

// The inputs as encode_call writes them, for the comparison after the call.
void encode_inputs(const Problem& p, const CallLayout& l, uint8_t* base) {
  const Shape& s = p.shape;
  encode_view(p.dtype, p.q, q_extents(s), l.q_stride, has_gaps(p.layouts.q), l.q_bytes, base + l.q);
  encode_view(p.dtype, p.k, k_extents(s), l.k_stride, has_gaps(p.layouts.k), l.k_bytes, base + l.k);
  encode_view(p.dtype, p.v, v_extents(s), l.v_stride, has_gaps(p.layouts.v), l.v_bytes, base + l.v);
  if (p.has_mask()) {
    if (l.abi == 1 && !p.mask_broadcast.full()) {
      Problem full = p;  // v1 has no strides: the broadcast mask is sent whole
      full.expand_mask();
      std::memcpy(base + l.mask, full.mask.data(), l.mask_bytes);
    } else {
      std::memcpy(base + l.mask, p.mask.data(), l.mask_bytes);
    }
  }
  if (p.has_bias()) {
    const std::size_t b = dtype_bytes(p.dtype);
    for (std::size_t i = 0; i < p.bias.size(); ++i) encode_element(p.dtype, p.bias[i], base + l.bias + i * b);
  }
  auto put_ints = [&](const std::vector<int32_t>& src, std::size_t at) {
    if (!src.empty()) std::memcpy(base + at, src.data(), src.size() * sizeof(int32_t));
  };
  auto put_floats = [&](const std::vector<double>& src, std::size_t at) {
    for (std::size_t i = 0; i < src.size(); ++i) {
      const float f = static_cast<float>(src[i]);
      std::memcpy(base + at + i * sizeof f, &f, sizeof f);
    }
  };
  put_ints(p.q_lens, l.q_lens);
  put_ints(p.kv_lens, l.kv_lens);
  put_floats(p.alibi_slopes, l.alibi);
  put_floats(p.sinks, l.sinks);
}

// Decodes the live elements of an output view into a logically row-major
// vector (padding rows 0); counts the poison left.
struct Decoded {
  std::vector<double> values;
  int64_t unwritten = 0;
  std::string first;  // where the first unwritten element is
};

template <class DecodeFn>
Decoded decode_view(const Problem& p, const OutputView& view, const uint8_t* base, DecodeFn&& decode_one) {
  const Extents& e = view.extents;
  Decoded d;
  d.values.assign(static_cast<std::size_t>(e[0] * e[1] * e[2] * e[3]), 0.0);
  const uint8_t* span = base + view.offset;
  for_each_live_row(p, view, [&](int64_t b, int64_t h, int64_t r, std::size_t at) {
    double* dst = d.values.data() + ((b * e[1] + h) * e[2] + r) * e[3];
    for (int64_t c = 0; c < e[3]; ++c) {
      bool poisoned = false;
      dst[c] = decode_one(span + at + c * view.element_bytes, poisoned);
      if (poisoned && d.unwritten++ == 0) {
        std::ostringstream m;
        m << "[bh=" << b * e[1] + h << "][i=" << r << "]";
        if (e[3] > 1) m << "[c=" << c << "]";
        d.first = m.str();
      }
    }
  });
  return d;
}

int64_t live_rows(const Problem& p) {
  int64_t n = 0;
  for (int64_t b = 0; b < p.shape.batch; ++b) n += p.q_len_of(b);
  return n * p.shape.heads;
}

}  // namespace

CallLayout layout_for(const Problem& p, int abi) {
  const std::size_t b = dtype_bytes(p.dtype);
  const Shape& s = p.shape;
  CallLayout l;
  l.abi = abi;
  auto view = [&](const TensorLayout& tl, const Extents& e, int64_t* stride) {
    const std::array<int64_t, 4> st = tl.strides(e);
    std::copy(st.begin(), st.end(), stride);
    return b * static_cast<std::size_t>(tl.span(e));
  };
  l.q_bytes = view(p.layouts.q, q_extents(s), l.q_stride);
  l.k_bytes = view(p.layouts.k, k_extents(s), l.k_stride);
  l.v_bytes = view(p.layouts.v, v_extents(s), l.v_stride);
  l.out_bytes = view(p.layouts.out, out_extents(s), l.out_stride);
  if (p.has_mask()) {
    const Broadcast how = abi == 1 ? Broadcast{} : p.mask_broadcast;
    l.mask_bytes = static_cast<std::size_t>(how.size(s));
    broadcast_strides(s, how, l.mask_stride);
  }
  if (p.has_bias()) {
    l.bias_bytes = b * p.bias.size();
    broadcast_strides(s, p.bias_broadcast, l.bias_stride);
  }
  l.q_lens_bytes = p.q_lens.size() * sizeof(int32_t);
  l.kv_lens_bytes = p.kv_lens.size() * sizeof(int32_t);
  l.alibi_bytes = p.alibi_slopes.size() * sizeof(float);
  l.sinks_bytes = p.sinks.size() * sizeof(float);
  l.lse_bytes = p.lse_requested ? static_cast<std::size_t>(s.rows()) * sizeof(float) : 0;
  std::size_t at = 0;
  for (auto [offset, bytes] : {std::pair{&l.q, l.q_bytes}, {&l.k, l.k_bytes}, {&l.v, l.v_bytes},
                               {&l.mask, l.mask_bytes}, {&l.bias, l.bias_bytes}, {&l.q_lens, l.q_lens_bytes},
                               {&l.kv_lens, l.kv_lens_bytes}, {&l.alibi, l.alibi_bytes},
                               {&l.sinks, l.sinks_bytes}}) {
    *offset = at;
    at = align_up(at + bytes);
  }
  l.inputs_end = at;
  l.guard_before = at; at += CallLayout::kGuardBytes;
  l.out = at; at += l.out_bytes;  // no padding: a write one past out lands in the guard
  l.guard_after = at; at += CallLayout::kGuardBytes;
  if (p.lse_requested) {
    at = align_up(at);  // a float array: out's bytes (2 per 16-bit element) may leave `at` unaligned
    l.lse_guard_before = at; at += CallLayout::kGuardBytes;
    l.lse = at; at += l.lse_bytes;
    l.lse_guard_after = at; at += CallLayout::kGuardBytes;
  }
  l.total = align_up(at);
  return l;
}

void encode_call(const Problem& p, const CallLayout& l, uint8_t* base) {
  encode_inputs(p, l, base);
  std::memcpy(base + l.guard_before, guard_pattern(), CallLayout::kGuardBytes);
  std::memcpy(base + l.guard_after, guard_pattern(), CallLayout::kGuardBytes);
  prepare_output(p, out_view(p, l), p.dtype, base);
  if (p.lse_requested) {
    std::memcpy(base + l.lse_guard_before, guard_pattern(), CallLayout::kGuardBytes);
    std::memcpy(base + l.lse_guard_after, guard_pattern(), CallLayout::kGuardBytes);
    prepare_output(p, lse_view(p, l), DType::f32, base);
  }
}

attncheck_call abi_call(const Problem& p, const CallLayout& l, uint8_t* base) {
  attncheck_call c{};
  c.dtype = static_cast<attncheck_dtype>(p.dtype);
  c.batch = p.shape.batch;
  c.heads = p.shape.heads;
  c.q_len = p.shape.q_len;
  c.kv_len = p.shape.kv_len;
  c.head_dim = p.shape.head_dim;
  c.value_dim = p.shape.value_dim;
  c.causal = static_cast<attncheck_causal>(p.causal);
  c.scale = p.scale;
  c.q = base + l.q;
  c.k = base + l.k;
  c.v = base + l.v;
  c.mask = p.has_mask() ? base + l.mask : nullptr;
  c.out = base + l.out;
  return c;
}

attncheck_call_v2 abi_call_v2(const Problem& p, const CallLayout& l, uint8_t* base) {
  attncheck_call_v2 c{};
  c.dtype = static_cast<attncheck_dtype>(p.dtype);
  c.batch = p.shape.batch;
  c.heads = p.shape.heads;
  c.kv_heads = p.shape.kv_head_count();
  c.q_len = p.shape.q_len;
  c.kv_len = p.shape.kv_len;
  c.head_dim = p.shape.head_dim;
  c.value_dim = p.shape.value_dim;
  auto in = [](attncheck_view& v, const uint8_t* data, const int64_t* stride) {
    v.data = data;
    std::copy(stride, stride + 4, v.stride);
  };
  in(c.q, base + l.q, l.q_stride);
  in(c.k, base + l.k, l.k_stride);
  in(c.v, base + l.v, l.v_stride);
  c.out.data = base + l.out;
  std::copy(l.out_stride, l.out_stride + 4, c.out.stride);
  c.lse = p.lse_requested ? reinterpret_cast<float*>(base + l.lse) : nullptr;
  c.q_lens = p.q_lens.empty() ? nullptr : reinterpret_cast<const int32_t*>(base + l.q_lens);
  c.kv_lens = p.kv_lens.empty() ? nullptr : reinterpret_cast<const int32_t*>(base + l.kv_lens);
  c.causal = static_cast<attncheck_causal>(p.causal);
  c.window_left = p.window_left < 0 ? -1 : p.window_left;
  c.window_right = p.window_right < 0 ? -1 : p.window_right;
  c.scale = p.scale;
  c.softcap = p.softcap;
  if (p.has_mask()) in(c.mask, base + l.mask, l.mask_stride);
  if (p.has_bias()) in(c.bias, base + l.bias, l.bias_stride);
  c.alibi_slopes = p.alibi_slopes.empty() ? nullptr : reinterpret_cast<const float*>(base + l.alibi);
  c.sinks = p.sinks.empty() ? nullptr : reinterpret_cast<const float*>(base + l.sinks);
  return c;
}

Outcome decode_call(const Problem& p, const CallLayout& l, const uint8_t* base) {
  Outcome o;
  std::ostringstream why;
  if (long at = first_changed_guard(base + l.guard_before); at >= 0) {
    why << "wrote " << (CallLayout::kGuardBytes - at) << " bytes before the start of out";
  } else if (long after = first_changed_guard(base + l.guard_after); after >= 0) {
    why << "wrote past the end of out (byte " << after << " after it)";
  } else if (p.lse_requested && first_changed_guard(base + l.lse_guard_before) >= 0) {
    why << "wrote before the start of lse";
  } else if (p.lse_requested && first_changed_guard(base + l.lse_guard_after) >= 0) {
    why << "wrote past the end of lse";
  } else if (std::string gap = changed_non_live(p, out_view(p, l), "out", base); !gap.empty()) {
    why << gap;
  } else if (std::string lse_gap = p.lse_requested ? changed_non_live(p, lse_view(p, l), "lse", base) : "";
             !lse_gap.empty()) {
    why << lse_gap;
  } else {
    // Inputs are const in the ABI: a changed input is a write outside the outputs.
    std::vector<uint8_t> fresh(l.inputs_end);
    encode_inputs(p, l, fresh.data());
    const struct { const char* name; std::size_t off, bytes; } ins[] = {
        {"the input tensor q", l.q, l.q_bytes},     {"the input tensor k", l.k, l.k_bytes},
        {"the input tensor v", l.v, l.v_bytes},     {"the input mask", l.mask, l.mask_bytes},
        {"the input bias", l.bias, l.bias_bytes},   {"q_lens", l.q_lens, l.q_lens_bytes},
        {"kv_lens", l.kv_lens, l.kv_lens_bytes},    {"alibi_slopes", l.alibi, l.alibi_bytes},
        {"sinks", l.sinks, l.sinks_bytes}};
    for (const auto& in : ins)
      if (in.bytes > 0 && std::memcmp(fresh.data() + in.off, base + in.off, in.bytes) != 0) {
        why << "changed " << in.name;
        break;
      }
  }
  if (!why.str().empty()) {
    o.status = CallStatus::out_of_bounds_write;
    o.message = why.str();
    return o;
  }
  const DType t = p.dtype;
  Decoded out = decode_view(p, out_view(p, l), base, [t](const uint8_t* e, bool& poisoned) {
    poisoned = is_poison(t, e);
    return decode_element(t, e);
  });
  o.out = std::move(out.values);
  int64_t unwritten = out.unwritten;
  std::ostringstream m;
  if (out.unwritten > 0)
    m << out.unwritten << " of " << live_rows(p) * p.shape.value_dim << " output elements left unwritten; first at "
      << out.first;
  if (p.lse_requested) {
    Decoded lse = decode_view(p, lse_view(p, l), base, [](const uint8_t* e, bool& poisoned) {
      poisoned = is_poison(DType::f32, e);
      return decode_element(DType::f32, e);
    });
    o.lse = std::move(lse.values);
    if (lse.unwritten > 0)
      m << (unwritten > 0 ? "; " : "") << lse.unwritten << " of " << live_rows(p) << " lse elements left unwritten; first at "
        << lse.first;
    unwritten += lse.unwritten;
  }
  if (unwritten > 0) {
    o.status = CallStatus::unwritten_output;
    o.message = m.str();
  }
  return o;
}

Outcome outcome_from_return(int rc, const char* err, const Problem& p, const CallLayout& l,
                            const uint8_t* base) {
  if (rc == ATTNCHECK_OK) return decode_call(p, l, base);
  Outcome o;
  o.status = rc == ATTNCHECK_UNSUPPORTED ? CallStatus::unsupported : CallStatus::error;
  std::ostringstream m;
  if (rc != ATTNCHECK_UNSUPPORTED) m << "forward returned " << rc;
  if (err && *err) m << (rc != ATTNCHECK_UNSUPPORTED ? ": " : "") << err;
  o.message = m.str();
  return o;
}

std::string_view call_status_name(CallStatus s) {
  switch (s) {
    case CallStatus::ok: return "ok";
    case CallStatus::unsupported: return "unsupported";
    case CallStatus::error: return "error";
    case CallStatus::crash: return "crash";
    case CallStatus::timeout: return "timeout";
    case CallStatus::out_of_bounds_write: return "out_of_bounds_write";
    case CallStatus::unwritten_output: return "unwritten_output";
  }
  return "?";
}

}  // namespace attncheck
