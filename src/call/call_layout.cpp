#include "call/call_layout.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

#include "call/call_zones.h"
#include "call/paged_pool.h"
#include "problem/kv_broadcast.h"
#include "problem/kv_storage.h"

namespace attncheck {

namespace {

std::size_t align_up(std::size_t n) {
  return (n + CallLayout::kAlign - 1) / CallLayout::kAlign * CallLayout::kAlign;
}

using namespace zones;

// Strides of a compactly stored [batch][heads][q_len][kv_len] tensor, 0 on
// broadcast axes (a v1 call always gets the full tensor).
void broadcast_strides(const Shape& s, const Broadcast& how, int64_t* stride) {
  const int64_t rows = how.per_row ? s.q_len : 1, heads = how.per_head ? s.heads : 1;
  stride[3] = 1;
  stride[2] = how.per_row ? s.kv_len : 0;
  stride[1] = how.per_head ? rows * s.kv_len : 0;
  stride[0] = how.per_batch ? heads * rows * s.kv_len : 0;
}

// Every input of the call, one at a time: its name (for a report), where it
// lies in the region, and how to write it at a given address. encode_call
// writes each into the region; changed_input writes each again into scratch
// and compares, so nothing of the whole inputs' size is allocated per call.
template <class Fn> void for_each_input(const Problem& p, const CallLayout& l, Fn&& fn) {
  const Shape& s = p.shape;
  const DType t = p.dtype;
  // A tensor padded (through its layout) or packed (by its side's cu_seqlens).
  auto tensor = [&](const std::vector<double>& src, const Extents& e, const int64_t* stride, const TensorLayout& tl,
                    const std::vector<int32_t>& cu, std::size_t bytes, uint8_t* dst) {
    if (!cu.empty()) encode_packed_view(t, src, e, stride, cu, bytes, dst);
    else encode_view(t, src, e, stride, has_gaps(tl), bytes, dst);
  };
  fn("the input tensor q", l.q, l.q_bytes, [&](uint8_t* dst) {
    tensor(p.q, q_extents(s), l.q_stride, p.layouts.q, p.cu_seqlens_q, l.q_bytes, dst);
  });
  fn("the input tensor k", l.k, l.k_bytes, [&](uint8_t* dst) {
    if (p.paged()) encode_paged_pool(p, p.k, s.head_dim, l.k_stride, l.k_bytes, dst);
    else if (p.k_format != KvFormat::dtype) encode_kv_stored(p, true, dst);
    else tensor(p.k, k_extents(s), l.k_stride, p.layouts.k, p.cu_seqlens_k, l.k_bytes, dst);
  });
  // V as a view of K: v's bytes are k's (written and compared as k's above).
  if (!p.v_view_of_k) fn("the input tensor v", l.v, l.v_bytes, [&](uint8_t* dst) {
    if (p.paged()) encode_paged_pool(p, p.v, s.value_dim, l.v_stride, l.v_bytes, dst);
    else if (p.v_format != KvFormat::dtype) encode_kv_stored(p, false, dst);
    else tensor(p.v, v_extents(s), l.v_stride, p.layouts.v, p.cu_seqlens_k, l.v_bytes, dst);
  });
  if (p.has_mask())
    fn("the input mask", l.mask, l.mask_bytes, [&](uint8_t* dst) {
      if (l.abi == 1 && !p.mask_broadcast.full()) {
        Problem full = p;  // v1 has no strides: the broadcast mask is sent whole
        full.expand_mask();
        std::memcpy(dst, full.mask.data(), l.mask_bytes);
      } else {
        std::memcpy(dst, p.mask.data(), l.mask_bytes);
      }
    });
  if (p.has_bias())
    fn("the input bias", l.bias, l.bias_bytes, [&](uint8_t* dst) {
      encode_elements(t, p.bias.data(), static_cast<int64_t>(p.bias.size()), dst);
    });
  auto ints = [&](const char* name, const std::vector<int32_t>& src, std::size_t at, std::size_t bytes) {
    if (!src.empty())
      fn(name, at, bytes, [&](uint8_t* dst) { std::memcpy(dst, src.data(), src.size() * sizeof(int32_t)); });
  };
  auto floats = [&](const char* name, const std::vector<double>& src, std::size_t at, std::size_t bytes) {
    if (!src.empty())
      fn(name, at, bytes, [&](uint8_t* dst) {
        encode_elements(DType::f32, src.data(), static_cast<int64_t>(src.size()), dst);
      });
  };
  ints("q_lens", p.q_lens, l.q_lens, l.q_lens_bytes);
  ints("kv_lens", p.kv_lens, l.kv_lens, l.kv_lens_bytes);
  if (p.alibi_per_batch()) {
    // [batch] rows of alibi_batch_stride floats, the first heads of each read:
    // the floats between them are NaN, which must not influence anything.
    fn("alibi_slopes", l.alibi, l.alibi_bytes, [&](uint8_t* dst) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      for (std::size_t at = 0; at < l.alibi_bytes; at += sizeof(float)) std::memcpy(dst + at, &nan, sizeof(float));
      for (int64_t b = 0; b < s.batch; ++b)
        encode_elements(DType::f32, p.alibi_slopes.data() + b * s.heads, s.heads,
                        dst + static_cast<std::size_t>(b * p.alibi_batch_stride) * sizeof(float));
    });
  } else {
    floats("alibi_slopes", p.alibi_slopes, l.alibi, l.alibi_bytes);
  }
  floats("sinks", p.sinks, l.sinks, l.sinks_bytes);
  ints("cu_seqlens_q", p.cu_seqlens_q, l.cu_q, l.cu_q_bytes);
  ints("cu_seqlens_k", p.cu_seqlens_k, l.cu_k, l.cu_k_bytes);
  ints("block_table", p.block_table, l.table, l.table_bytes);
  for (const bool is_k : {true, false})
    if (const std::size_t bytes = is_k ? l.k_scale_bytes : l.v_scale_bytes; bytes > 0)
      fn(is_k ? "k_scale" : "v_scale", is_k ? l.k_scale : l.v_scale, bytes, [&, is_k](uint8_t* dst) {
        const std::vector<float> scales = kv_scale_array(p, is_k);
        std::memcpy(dst, scales.data(), bytes);
      });
  if (l.backward)
    fn("the input tensor dout", l.dout, l.dout_bytes, [&](uint8_t* dst) {
      encode_view(t, p.dout, out_extents(s), l.dout_stride, has_gaps(p.layouts.dout), l.dout_bytes, dst);
    });
}

void encode_inputs(const Problem& p, const CallLayout& l, uint8_t* base) {
  for_each_input(p, l, [&](const char*, std::size_t at, std::size_t, auto&& write) { write(base + at); });
}

// One gradient's zone: [guard | span | guard], from `at` on.
CallLayout::GradZone grad_zone(std::size_t& at, std::size_t bytes, const std::array<int64_t, 4>& stride) {
  CallLayout::GradZone z;
  at = align_up(at);
  z.guard_before = at; at += CallLayout::kGuardBytes;
  z.data = at; at += bytes;  // no padding: a write one past the span lands in the guard
  z.guard_after = at; at += CallLayout::kGuardBytes;
  z.bytes = bytes;
  std::copy(stride.begin(), stride.end(), z.stride);
  return z;
}

}  // namespace

namespace zones {

std::string changed_input(const Problem& p, const CallLayout& l, const uint8_t* base) {
  // Kept between calls (a call's largest input, not all of them); let go of
  // past 64 MiB, so one long-context call does not hold it for the run.
  thread_local std::vector<uint8_t> fresh;
  std::string changed;
  for_each_input(p, l, [&](const char* name, std::size_t at, std::size_t bytes, auto&& write) {
    if (!changed.empty() || bytes == 0) return;
    fresh.resize(bytes);
    write(fresh.data());
    if (std::memcmp(fresh.data(), base + at, bytes) != 0) changed = name;
  });
  if (fresh.capacity() > (std::size_t{64} << 20)) std::vector<uint8_t>().swap(fresh);
  return changed;
}

}  // namespace zones

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
  // A packed side: dense [total][heads][cols] (problem.h; its layouts are dense).
  auto packed = [&](int64_t total, int64_t heads, int64_t cols, int64_t* stride) {
    const std::array<int64_t, 4> st = packed_strides(heads, cols);
    std::copy(st.begin(), st.end(), stride);
    return b * static_cast<std::size_t>(total * heads * cols);
  };
  const int64_t kvh = s.kv_head_count();
  l.q_bytes = p.packed_q() ? packed(p.total_q, s.heads, s.head_dim, l.q_stride) : view(p.layouts.q, q_extents(s), l.q_stride);
  l.k_bytes = p.packed_k() ? packed(p.total_k, kvh, s.head_dim, l.k_stride) : view(p.layouts.k, k_extents(s), l.k_stride);
  l.v_bytes = p.packed_k() ? packed(p.total_k, kvh, s.value_dim, l.v_stride) : view(p.layouts.v, v_extents(s), l.v_stride);
  // K or V expanded (ABI v3's BROADCAST_KV, padded keys): the view of one batch
  // entry (one kv head), its layout's strides for those extents, and stride 0
  // on the broadcast axes; encode_view writes each repeated (equal) element to
  // the same place.
  for (const bool is_k : {true, false}) {
    const int64_t how = is_k ? p.k_broadcast : p.v_broadcast;
    if (how == 0) continue;
    Extents one = is_k ? k_extents(s) : v_extents(s);
    if (how & kKvBroadcastBatch) one[0] = 1;
    if (how & kKvBroadcastHeads) one[1] = 1;
    int64_t* stride = is_k ? l.k_stride : l.v_stride;
    (is_k ? l.k_bytes : l.v_bytes) = view(is_k ? p.layouts.k : p.layouts.v, one, stride);
    if (how & kKvBroadcastBatch) stride[0] = 0;
    if (how & kKvBroadcastHeads) stride[1] = 0;
  }
  if (p.paged()) {  // the page pool (call/paged_pool.h)
    const std::array<int64_t, 4> ks = paged_strides(p, p.layouts.k, s.head_dim),
                                  vs = paged_strides(p, p.layouts.v, s.value_dim);
    std::copy(ks.begin(), ks.end(), l.k_stride);
    std::copy(vs.begin(), vs.end(), l.v_stride);
    l.k_bytes = paged_pool_bytes(p, p.layouts.k, s.head_dim);
    l.v_bytes = paged_pool_bytes(p, p.layouts.v, s.value_dim);
    l.table_bytes = p.block_table.size() * sizeof(int32_t);
  }
  for (const bool is_k : {true, false}) {  // a stored format (problem/kv_storage.h)
    if ((is_k ? p.k_format : p.v_format) == KvFormat::dtype) continue;
    kv_stored_strides(p, is_k, is_k ? l.k_stride : l.v_stride);
    (is_k ? l.k_bytes : l.v_bytes) = static_cast<std::size_t>(kv_stored_bytes(p, is_k));
    (is_k ? l.k_scale_bytes : l.v_scale_bytes) = kv_scale_array(p, is_k).size() * sizeof(float);
  }
  if (p.v_view_of_k) {  // V as a view of K (MLA): k's strides, no bytes of its own (placed at k below)
    std::copy(l.k_stride, l.k_stride + 4, l.v_stride);
    l.v_bytes = 0;
    l.v_scale_bytes = 0;  // and K's scale: v_scale is k_scale (abi_call_v3)
  }
  l.out_bytes = p.packed_q() ? packed(p.total_q, s.heads, s.value_dim, l.out_stride)
                             : view(p.layouts.out, out_extents(s), l.out_stride);
  l.cu_q_bytes = p.cu_seqlens_q.size() * sizeof(int32_t);
  l.cu_k_bytes = p.cu_seqlens_k.size() * sizeof(int32_t);
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
  l.alibi_bytes = (p.alibi_per_batch() ? static_cast<std::size_t>((s.batch - 1) * p.alibi_batch_stride + s.heads)
                                       : p.alibi_slopes.size()) * sizeof(float);
  l.sinks_bytes = p.sinks.size() * sizeof(float);
  l.lse_bytes = p.lse_requested ? static_cast<std::size_t>(s.rows()) * sizeof(float) : 0;
  l.backward = abi >= 2 && p.is_backward();
  if (l.backward) l.dout_bytes = view(p.layouts.dout, out_extents(s), l.dout_stride);
  std::size_t at = 0;
  for (auto [offset, bytes] : {std::pair{&l.q, l.q_bytes}, {&l.k, l.k_bytes}, {&l.v, l.v_bytes},
                               {&l.mask, l.mask_bytes}, {&l.bias, l.bias_bytes}, {&l.q_lens, l.q_lens_bytes},
                               {&l.kv_lens, l.kv_lens_bytes}, {&l.alibi, l.alibi_bytes},
                               {&l.sinks, l.sinks_bytes}, {&l.cu_q, l.cu_q_bytes}, {&l.cu_k, l.cu_k_bytes},
                               {&l.table, l.table_bytes}, {&l.k_scale, l.k_scale_bytes},
                               {&l.v_scale, l.v_scale_bytes}, {&l.dout, l.dout_bytes}}) {
    *offset = at;
    at = align_up(at + bytes);
  }
  if (p.v_view_of_k) l.v = l.k;  // v.data == k.data
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
  if (l.backward) {
    auto zone = [&](const TensorLayout& tl, const Extents& e) {
      const std::array<int64_t, 4> st = tl.strides(e);
      return grad_zone(at, b * static_cast<std::size_t>(tl.span(e)), st);
    };
    l.dq = zone(p.layouts.dq, q_extents(s));
    l.dk = zone(p.layouts.dk, k_extents(s));
    l.dv = zone(p.layouts.dv, v_extents(s));
  }
  l.total = align_up(at);
  return l;
}

void encode_call(const Problem& p, const CallLayout& l, uint8_t* base) {
  encode_inputs(p, l, base);
  fill_guard(base + l.guard_before, CallLayout::kGuardBytes);
  fill_guard(base + l.guard_after, CallLayout::kGuardBytes);
  prepare_output(p, out_view(p, l), p.dtype, base);
  if (p.lse_requested) {
    fill_guard(base + l.lse_guard_before, CallLayout::kGuardBytes);
    fill_guard(base + l.lse_guard_after, CallLayout::kGuardBytes);
    prepare_output(p, lse_view(p, l), DType::f32, base);
  }
  if (l.backward)
    for (const GradTensor g : kGradTensors) prepare_grad_zone(p, l, g, base);
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

attncheck_call_v3 abi_call_v3(const Problem& p, const CallLayout& l, uint8_t* base) {
  attncheck_call_v3 c{};
  c.v2 = abi_call_v2(p, l, base);
  if (p.packed_q()) {
    c.cu_seqlens_q = reinterpret_cast<const int32_t*>(base + l.cu_q);
    c.total_q = p.total_q;
  }
  if (p.packed_k()) {
    c.cu_seqlens_k = reinterpret_cast<const int32_t*>(base + l.cu_k);
    c.total_k = p.total_k;
  }
  if (p.paged()) {
    c.block_table = reinterpret_cast<const int32_t*>(base + l.table);
    c.max_pages_per_seq = p.max_pages_per_seq;
    c.num_pages = p.num_pages;
    c.page_size = p.page_size;
  }
  c.k_format = static_cast<attncheck_kv_format>(p.k_format);
  c.v_format = static_cast<attncheck_kv_format>(p.v_format);
  for (const bool is_k : {true, false}) {
    const std::size_t bytes = is_k ? l.k_scale_bytes : l.v_scale_bytes;
    if (bytes == 0) continue;
    const KvScale s = kv_scale_view(p, is_k, reinterpret_cast<const float*>(base + (is_k ? l.k_scale : l.v_scale)));
    attncheck_scale& to = is_k ? c.k_scale : c.v_scale;
    to.data = s.data;
    std::copy(s.stride, s.stride + 3, to.stride);
  }
  if (p.v_view_of_k) c.v_scale = c.k_scale;  // V as a view of K shares K's scale (data and strides)
  c.alibi_batch_stride = p.alibi_batch_stride;
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
  } else if (std::string input = changed_input(p, l, base); !input.empty()) {
    // Inputs are const in the ABI: a changed input is a write outside the outputs.
    why << "changed " << input;
  } else if (const char* grad = l.backward ? changed_grad_zone(p, l, base) : nullptr) {
    why << "wrote into " << grad << "'s allocation, which the forward call is not given";
  }
  if (!why.str().empty()) {
    o.status = CallStatus::out_of_bounds_write;
    o.message = why.str();
    return o;
  }
  const DType t = p.dtype;
  Decoded out = decode_view(p, out_view(p, l), t, base, 0.0);
  o.out = std::move(out.values);
  int64_t unwritten = out.unwritten;
  std::ostringstream m;
  if (out.unwritten > 0)
    m << out.unwritten << " of " << live_elements(p, out_view(p, l)) << " output elements left unwritten; first at "
      << out.first;
  if (p.lse_requested) {
    Decoded lse = decode_view(p, lse_view(p, l), DType::f32, base, 0.0);
    o.lse = std::move(lse.values);
    if (lse.unwritten > 0)
      m << (unwritten > 0 ? "; " : "") << lse.unwritten << " of " << live_elements(p, lse_view(p, l)) << " lse elements left unwritten; first at "
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
