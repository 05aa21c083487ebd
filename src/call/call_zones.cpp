#include "call/call_zones.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <sstream>

namespace attncheck::zones {

namespace {

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

template <class RowFn>
void for_each_live_row(const Problem& p, const OutputView& view, RowFn&& fn) {
  for (int64_t b = 0; b < view.extents[0]; ++b)
    for (int64_t h = 0; h < view.extents[1]; ++h)
      for (int64_t r = 0, rows = live_rows_of(p, view, b); r < rows; ++r)
        fn(b, h, r, static_cast<std::size_t>(b * view.stride[0] + h * view.stride[1] +
                                              (r + (view.cu ? view.cu[b] : 0)) * view.stride[2]) *
                        view.element_bytes);
}

// Which element slot a byte of an output span is, said for a report.
std::string describe_span_byte(const Problem& p, const OutputView& view, std::size_t at) {
  int64_t e = static_cast<int64_t>(at / view.element_bytes);
  if (view.cu) {  // packed: [total][heads][cols], row r is slack or padding of some sequence
    const int64_t r = e / view.stride[2], h = e % view.stride[2] / view.stride[1];
    const int64_t batch = view.extents[0];
    std::ostringstream os;
    const char* cu = view.rows_are_keys ? "cu_seqlens_k" : "cu_seqlens_q";
    if (r >= view.cu[batch]) {
      os << "the slack row " << r << ", head " << h << " of the packed view (" << cu << "[batch] = " << view.cu[batch] << ")";
      return os.str();
    }
    int64_t b = 0;
    while (b + 1 < batch && view.cu[b + 1] <= r) ++b;
    os << "the padding row " << r << ", head " << h << " of the packed view: row " << r - view.cu[b] << " of sequence "
       << b << "'s slot, which has " << live_rows_of(p, view, b) << " live rows";
    return os.str();
  }
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
  if (view.rows_are_keys)
    os << "the padding key [b=" << idx[0] << "][h=" << idx[1] << "][j=" << idx[2] << "] (kv_lens[" << idx[0]
       << "] = " << p.kv_len_of(idx[0]) << ")";
  else
    os << "the padding row [b=" << idx[0] << "][h=" << idx[1] << "][i=" << idx[2] << "] (q_lens[" << idx[0]
       << "] = " << p.q_len_of(idx[0]) << ")";
  return os.str();
}

}  // namespace

static_assert(std::endian::native == std::endian::little, "poison_bits are stored little-endian");

void poison(DType t, uint8_t* dst, int64_t n) { fill_poison(t, dst, n); }

bool is_poison(DType t, const uint8_t* src) {
  const DTypeInfo& d = info(t);
  return std::memcmp(src, &d.poison_bits, d.bytes) == 0;
}

void fill_guard(uint8_t* dst, std::size_t n) {
  for (std::size_t at = 0; at < n; at += CallLayout::kGuardBytes)
    std::memcpy(dst + at, guard_pattern(), std::min(CallLayout::kGuardBytes, n - at));
}

long first_changed_guard(const uint8_t* g) {
  if (std::memcmp(g, guard_pattern(), CallLayout::kGuardBytes) == 0) return -1;
  for (std::size_t i = 0; i < CallLayout::kGuardBytes; ++i)
    if (g[i] != guard_byte(i)) return static_cast<long>(i);
  return -1;
}

void encode_view(DType t, const std::vector<double>& src, const Extents& e, const int64_t* stride, bool gaps,
                 std::size_t span_bytes, uint8_t* dst) {
  const std::size_t b = dtype_bytes(t);
  if (gaps) {
    uint8_t nan[8];
    encode_element(t, std::numeric_limits<double>::quiet_NaN(), nan);
    for (std::size_t at = 0; at + b <= span_bytes; at += b) std::memcpy(dst + at, nan, b);
  }
  // Rows are contiguous (stride[3] is 1); src is [e0][e1][e2][e3] row-major.
  const double* from = src.data();
  for (int64_t x = 0; x < e[0]; ++x)
    for (int64_t y = 0; y < e[1]; ++y)
      for (int64_t r = 0; r < e[2]; ++r, from += e[3])
        encode_elements(t, from, e[3], dst + b * static_cast<std::size_t>(x * stride[0] + y * stride[1] + r * stride[2]));
}

void encode_packed_view(DType t, const std::vector<double>& src, const Extents& e, const int64_t* stride,
                        const std::vector<int32_t>& cu, std::size_t span_bytes, uint8_t* dst) {
  const std::size_t b = dtype_bytes(t);
  uint8_t nan[8];
  encode_element(t, std::numeric_limits<double>::quiet_NaN(), nan);
  for (std::size_t at = 0; at + b <= span_bytes; at += b) std::memcpy(dst + at, nan, b);
  for (int64_t x = 0; x < e[0]; ++x)
    for (int64_t y = 0; y < e[1]; ++y)
      for (int64_t r = 0, rows = cu[x + 1] - cu[x]; r < rows; ++r)
        encode_elements(t, src.data() + ((x * e[1] + y) * e[2] + r) * e[3], e[3],
                        dst + b * static_cast<std::size_t>(y * stride[1] + (cu[x] + r) * stride[2]));
}

int64_t live_rows_of(const Problem& p, const OutputView& view, int64_t b) {
  return view.rows_are_keys ? p.kv_len_of(b) : p.q_len_of(b);
}

int64_t live_elements(const Problem& p, const OutputView& view) {
  int64_t rows = 0;
  for (int64_t b = 0; b < view.extents[0]; ++b) rows += live_rows_of(p, view, b);
  return rows * view.extents[1] * view.extents[3];
}

OutputView out_view(const Problem& p, const CallLayout& l) {
  OutputView v{l.out, l.out_bytes, dtype_bytes(p.dtype), out_extents(p.shape), {}, false};
  std::copy(l.out_stride, l.out_stride + 4, v.stride);
  v.all_live = !has_gaps(p.layouts.out) && p.all_q_rows_live();
  if (p.packed_q()) v.cu = p.cu_seqlens_q.data();
  return v;
}

OutputView lse_view(const Problem& p, const CallLayout& l) {
  const Shape& s = p.shape;
  return {l.lse, l.lse_bytes, sizeof(float), {s.batch, s.heads, s.q_len, 1},
          {s.heads * s.q_len, s.q_len, 1, 1}, p.all_q_rows_live()};
}

const char* grad_name(GradTensor which) {
  switch (which) {
    case GradTensor::dq: return "dq";
    case GradTensor::dk: return "dk";
    case GradTensor::dv: return "dv";
  }
  return "?";
}

const CallLayout::GradZone& grad_zone_of(const CallLayout& l, GradTensor which) {
  return which == GradTensor::dq ? l.dq : which == GradTensor::dk ? l.dk : l.dv;
}

OutputView grad_view(const Problem& p, const CallLayout& l, GradTensor which) {
  const Shape& s = p.shape;
  const CallLayout::GradZone& zone = grad_zone_of(l, which);
  OutputView v{zone.data, zone.bytes, dtype_bytes(p.dtype), {}, {}, false};
  std::copy(zone.stride, zone.stride + 4, v.stride);
  switch (which) {
    case GradTensor::dq:
      v.extents = q_extents(s);
      v.all_live = !has_gaps(p.layouts.dq) && p.q_lens.empty();
      v.name = grad_name(which);
      v.col_axis = 'd';
      break;
    case GradTensor::dk:
      v.extents = k_extents(s);
      v.all_live = !has_gaps(p.layouts.dk) && p.kv_lens.empty();
      v.rows_are_keys = true;
      v.name = grad_name(which);
      v.row_axis = 'j';
      v.col_axis = 'd';
      break;
    case GradTensor::dv:
      v.extents = v_extents(s);
      v.all_live = !has_gaps(p.layouts.dv) && p.kv_lens.empty();
      v.rows_are_keys = true;
      v.name = grad_name(which);
      v.row_axis = 'j';
      v.col_axis = 'c';
      break;
  }
  return v;
}

void prepare_output(const Problem& p, const OutputView& view, DType t, uint8_t* base) {
  uint8_t* span = base + view.offset;
  if (!view.all_live) fill_guard(span, view.span_bytes);
  for_each_live_row(p, view, [&](int64_t, int64_t, int64_t, std::size_t at) {
    poison(t, span + at, view.extents[3]);
  });
}

namespace {

// A gradient's zone as encoded, written at `zone` (its guard_before byte).
void write_grad_zone(const Problem& p, const CallLayout& l, GradTensor which, uint8_t* zone) {
  const CallLayout::GradZone& z = grad_zone_of(l, which);
  OutputView view = grad_view(p, l, which);
  view.offset = z.data - z.guard_before;
  fill_guard(zone, CallLayout::kGuardBytes);
  fill_guard(zone + (z.guard_after - z.guard_before), CallLayout::kGuardBytes);
  prepare_output(p, view, p.dtype, zone);
}

}  // namespace

void prepare_grad_zone(const Problem& p, const CallLayout& l, GradTensor which, uint8_t* base) {
  write_grad_zone(p, l, which, base + grad_zone_of(l, which).guard_before);
}

const char* changed_grad_zone(const Problem& p, const CallLayout& l, const uint8_t* base) {
  for (const GradTensor g : kGradTensors) {
    const CallLayout::GradZone& z = grad_zone_of(l, g);
    std::vector<uint8_t> fresh(z.end() - z.guard_before);
    write_grad_zone(p, l, g, fresh.data());
    if (std::memcmp(fresh.data(), base + z.guard_before, fresh.size()) != 0) return grad_name(g);
  }
  return nullptr;
}

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

Decoded decode_view(const Problem& p, const OutputView& view, DType t, const uint8_t* base, double padding) {
  const Extents& e = view.extents;
  Decoded d;
  d.values.assign(static_cast<std::size_t>(e[0] * e[1] * e[2] * e[3]), padding);
  const uint8_t* span = base + view.offset;
  for_each_live_row(p, view, [&](int64_t b, int64_t h, int64_t r, std::size_t at) {
    double* dst = d.values.data() + ((b * e[1] + h) * e[2] + r) * e[3];
    decode_elements(t, span + at, e[3], dst);
    int64_t c = 0;  // the row's first unwritten element
    const int64_t unwritten = count_poison(t, span + at, e[3], &c);
    if (unwritten > 0 && d.unwritten == 0) {
      std::ostringstream m;
      if (view.name)
        m << view.name << "[b=" << b << "][h=" << h << "][" << view.row_axis << "=" << r << "][" << view.col_axis
          << "=" << c << "]";
      else {
        m << "[bh=" << b * e[1] + h << "][i=" << r << "]";
        if (e[3] > 1) m << "[c=" << c << "]";
      }
      d.first = m.str();
    }
    d.unwritten += unwritten;
  });
  return d;
}

}  // namespace attncheck::zones
