#include "problem/call_layout.h"

#include <array>
#include <bit>
#include <cstring>
#include <sstream>

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

void encode_tensor(DType t, const std::vector<double>& src, uint8_t* dst) {
  const std::size_t b = dtype_bytes(t);
  for (std::size_t i = 0; i < src.size(); ++i) encode_element(t, src[i], dst + i * b);
}

// Index of the first changed guard byte, or -1.
long first_changed_guard(const uint8_t* g) {
  if (std::memcmp(g, guard_pattern(), CallLayout::kGuardBytes) == 0) return -1;
  for (std::size_t i = 0; i < CallLayout::kGuardBytes; ++i)
    if (g[i] != guard_byte(i)) return static_cast<long>(i);
  return -1;
}

}  // namespace

CallLayout layout_for(const Problem& p) {
  const std::size_t b = dtype_bytes(p.dtype);
  CallLayout l;
  l.q_bytes = b * p.shape.q_size();
  l.k_bytes = b * p.shape.k_size();
  l.v_bytes = b * p.shape.v_size();
  l.mask_bytes = p.has_mask() ? p.shape.mask_size() : 0;
  l.out_bytes = b * p.shape.out_size();
  std::size_t at = 0;
  l.q = at; at = align_up(at + l.q_bytes);
  l.k = at; at = align_up(at + l.k_bytes);
  l.v = at; at = align_up(at + l.v_bytes);
  l.mask = at; at = align_up(at + l.mask_bytes);
  l.guard_before = at; at += CallLayout::kGuardBytes;
  l.out = at; at += l.out_bytes;  // no padding: a write one past out lands in the guard
  l.guard_after = at; at += CallLayout::kGuardBytes;
  l.total = align_up(at);
  return l;
}

void encode_call(const Problem& p, const CallLayout& l, uint8_t* base) {
  encode_tensor(p.dtype, p.q, base + l.q);
  encode_tensor(p.dtype, p.k, base + l.k);
  encode_tensor(p.dtype, p.v, base + l.v);
  if (p.has_mask()) std::memcpy(base + l.mask, p.mask.data(), l.mask_bytes);
  std::memcpy(base + l.guard_before, guard_pattern(), CallLayout::kGuardBytes);
  std::memcpy(base + l.guard_after, guard_pattern(), CallLayout::kGuardBytes);
  poison(p.dtype, base + l.out, p.shape.out_size());
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

Outcome decode_call(const Problem& p, const CallLayout& l, const uint8_t* base) {
  Outcome o;
  std::ostringstream why;
  if (long at = first_changed_guard(base + l.guard_before); at >= 0) {
    why << "wrote " << (CallLayout::kGuardBytes - at) << " bytes before the start of out";
  } else if (long after = first_changed_guard(base + l.guard_after); after >= 0) {
    why << "wrote past the end of out (byte " << after << " after it)";
  } else {
    // Inputs are const in the ABI: a changed input is a write outside out.
    std::vector<uint8_t> fresh(l.guard_before);
    const std::size_t b = dtype_bytes(p.dtype);
    struct { const char* name; const std::vector<double>* t; std::size_t off; } ins[] = {
        {"q", &p.q, l.q}, {"k", &p.k, l.k}, {"v", &p.v, l.v}};
    for (auto& in : ins) {
      encode_tensor(p.dtype, *in.t, fresh.data() + in.off);
      if (std::memcmp(fresh.data() + in.off, base + in.off, in.t->size() * b) != 0) {
        why << "changed the input tensor " << in.name;
        break;
      }
    }
    if (why.str().empty() && p.has_mask() && std::memcmp(p.mask.data(), base + l.mask, l.mask_bytes) != 0)
      why << "changed the input mask";
  }
  if (!why.str().empty()) {
    o.status = CallStatus::out_of_bounds_write;
    o.message = why.str();
    return o;
  }
  const std::size_t b = dtype_bytes(p.dtype);
  const int64_t n = p.shape.out_size();
  o.out.resize(n);
  int64_t unwritten = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* e = base + l.out + i * b;
    if (is_poison(p.dtype, e)) {
      if (first < 0) first = i;
      ++unwritten;
    }
    o.out[i] = decode_element(p.dtype, e);
  }
  if (unwritten > 0) {
    const int64_t vd = p.shape.value_dim, ql = p.shape.q_len;
    std::ostringstream m;
    m << unwritten << " of " << n << " output elements left unwritten; first at [bh=" << first / (vd * ql)
      << "][i=" << (first / vd) % ql << "][c=" << first % vd << "]";
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
