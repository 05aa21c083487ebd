// The ABI v2 call (attncheck_call_v2) seen with typed, strided pointers, its
// validation, and the one place where the built-ins turn a v2 dtype into
// arithmetic, as typed_call.h does for v1: f32 and f64 read the caller's
// memory in place through the views' strides; f16 and bf16 are widened to
// float (q, k, v and the bias; the rest needs no conversion), computed by the
// float kernel and rounded back to nearest-even into the live elements of out
// only (padding rows and gaps of out are never written).
//
// Example usage (a kernel written once as a template over float/double):
//   template <class T> void my_kernel(const TypedCallV2<T>& c) { ... }
//   int my_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
//     return dispatch_v2(call, err, err_len, [](const auto& c) { my_kernel(c); });
//   }
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "attncheck/plugin_v3.h"
#include "impls/kv_format_gather.h"
#include "impls/paged_gather.h"
#include "impls/typed_call.h"

namespace attncheck {

// A 4-d input view [batch][head][row][col]: element (b, h, r, c) is at
// data + b*stride[0] + h*stride[1] + r*stride[2] + c (stride[3] is 1).
// A packed view (ABI v3, cu_seqlens): `cu` [batch + 1] is set, stride[0] is
// 0, and row r of sequence b is the buffer's row cu[b] + r.
template <class T>
struct StridedView {
  const T* data = nullptr;
  int64_t stride[4] = {0, 0, 0, 1};
  const int32_t* cu = nullptr;

  explicit operator bool() const { return data != nullptr; }
  // Row (b, h, r): its `col` elements are contiguous.
  const T* row(int64_t b, int64_t h, int64_t r) const {
    return data + b * stride[0] + h * stride[1] + (r + (cu ? cu[b] : 0)) * stride[2];
  }
  T operator()(int64_t b, int64_t h, int64_t r, int64_t c) const { return row(b, h, r)[c]; }
};

// The same for an output view.
template <class T>
struct StridedOutView {
  T* data = nullptr;
  int64_t stride[4] = {0, 0, 0, 1};
  const int32_t* cu = nullptr;  // packed, as StridedView's

  T* row(int64_t b, int64_t h, int64_t r) const {
    return data + b * stride[0] + h * stride[1] + (r + (cu ? cu[b] : 0)) * stride[2];
  }
};

// Keys [begin, end) that a row may see before its mask and bias are read:
// the ones that exist (j < Lk) within the causal rule and the window.
struct KeyRange {
  int64_t begin = 0, end = 0;
  bool empty() const { return begin >= end; }
};

// A typed view of one v2 call: the fields of attncheck_call_v2, pointers cast
// to T. For f16/bf16 calls T is float and q, k, v, bias and out point at
// widened dense copies (out's copy is rounded back into the call's out).
template <class T>
struct TypedCallV2 {
  int64_t batch, heads, kv_heads, q_len, kv_len, head_dim, value_dim;
  StridedView<T> q;             // [batch][heads][q_len][head_dim]
  StridedView<T> k;             // [batch][kv_heads][kv_len][head_dim]
  StridedView<T> v;             // [batch][kv_heads][kv_len][value_dim]
  StridedOutView<T> out;        // [batch][heads][q_len][value_dim]: write live rows only
  float* lse;                   // [batch][heads][q_len] dense, or nullptr: write live rows only
  const int32_t* q_lens;        // [batch] or nullptr
  const int32_t* kv_lens;       // [batch] or nullptr
  int causal;                   // ATTNCHECK_CAUSAL_* (validated)
  // < 0: unbounded; else at most q_len + kv_len (a wider window admits every
  // key, and the clamp keeps d_i - window_left from overflowing).
  int64_t window_left, window_right;
  double scale;                 // as passed: NaN means the default 1/sqrt(head_dim)
  double softcap;               // 0: none
  StridedView<uint8_t> mask;    // [batch][heads][q_len][kv_len], stride 0 broadcasts; data nullptr: none
  StridedView<T> bias;          // [batch][heads][q_len][kv_len], stride 0 broadcasts; data nullptr: none
  const float* alibi_slopes;    // [heads] or nullptr; [batch] rows of alibi_batch_stride (ABI v3)
  const float* sinks;           // [heads] or nullptr
  // ABI v3's packing (nullptr: padded): q and out packed by cu_q [batch + 1]
  // (their views carry it too), k and v by cu_k. The slot of b is then
  // cu[b+1] - cu[b] rows long, and its length Lq (Lk) without q_lens (kv_lens).
  const int32_t* cu_q = nullptr;
  const int32_t* cu_k = nullptr;
  // ABI v3's ALiBi per (batch, head): 0, or the row stride of alibi_slopes.
  int64_t alibi_batch_stride = 0;

  // The ALiBi slope of query head h in batch entry b (alibi_slopes given).
  float slope(int64_t b, int64_t h) const { return alibi_slopes[b * alibi_batch_stride + h]; }
  // Query heads per kv head; query head h reads kv head h / group().
  int64_t group() const { return heads / kv_heads; }
  int64_t kv_head_of(int64_t h) const { return h / group(); }
  // Rows and keys that exist in batch b (Lq and Lk); the rest is padding.
  int64_t q_len_of(int64_t b) const { return q_lens ? q_lens[b] : cu_q ? cu_q[b + 1] - cu_q[b] : q_len; }
  int64_t kv_len_of(int64_t b) const { return kv_lens ? kv_lens[b] : cu_k ? cu_k[b + 1] - cu_k[b] : kv_len; }
  // Row i's diagonal d_i: i under TOP_LEFT, else i + Lk - Lq (bottom right).
  int64_t diagonal(int64_t b, int64_t i) const {
    return causal == ATTNCHECK_CAUSAL_TOP_LEFT ? i : i + kv_len_of(b) - q_len_of(b);
  }
  // Keys of row i of batch b within Lk, the causal rule and the window.
  KeyRange key_range(int64_t b, int64_t i) const {
    const int64_t d = diagonal(b, i);
    KeyRange r{0, kv_len_of(b)};
    if (causal != ATTNCHECK_CAUSAL_NONE) r.end = std::min(r.end, d + 1);
    if (window_right >= 0) r.end = std::min(r.end, d + window_right + 1);
    if (window_left >= 0) r.begin = std::max<int64_t>(0, d - window_left);
    return r;
  }
  // The spec's visibility rule for query i of (b, h) and key j.
  bool visible(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (i >= q_len_of(b)) return false;
    const KeyRange r = key_range(b, i);
    if (j < r.begin || j >= r.end) return false;
    if (mask && mask(b, h, i, j) == 0) return false;
    return !bias || bias(b, h, i, j) != -std::numeric_limits<T>::infinity();
  }
  // The scale the ABI asks for, computed in double and then rounded to T once.
  T abi_scale() const {
    return static_cast<T>(std::isnan(scale) ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : scale);
  }
  // Sink logit of query head h, or -inf without sinks.
  T sink_of(int64_t h) const { return sinks ? static_cast<T>(sinks[h]) : -std::numeric_limits<T>::infinity(); }
  // lse of rows (b, h, 0..q_len), or nullptr when not asked for.
  float* lse_row(int64_t b, int64_t h) const { return lse ? lse + (b * heads + h) * q_len : nullptr; }
};

namespace detail {

// Largest element offset of a view with these extents and strides, or -1 when
// a stride is negative, stride[3] != 1, or the offset overflows int64.
inline int64_t view_extent(const int64_t (&stride)[4], const int64_t (&extents)[4]) {
  if (stride[3] != 1) return -1;
  int64_t last = 0;
  for (int a = 0; a < 4; ++a) {
    int64_t step = 0;
    if (stride[a] < 0 || __builtin_mul_overflow(extents[a] - 1, stride[a], &step) ||
        __builtin_add_overflow(last, step, &last))
      return -1;
  }
  return last;
}

// Checks what every v2 kernel relies on; "" when the call is usable.
inline std::string call_v2_defect(const attncheck_call_v2* call) {
  if (!call) return "call is NULL";
  const attncheck_call_v2& c = *call;
  if (c.batch <= 0 || c.heads <= 0 || c.kv_heads <= 0 || c.q_len <= 0 || c.kv_len <= 0 || c.head_dim <= 0 ||
      c.value_dim <= 0)
    return "every extent must be positive";
  if (c.heads % c.kv_heads != 0) return "kv_heads must divide heads";
  if (!c.q.data || !c.k.data || !c.v.data || !c.out.data) return "q, k, v and out must not be NULL";
  if (const int causal = enum_value(c.causal); causal < ATTNCHECK_CAUSAL_NONE || causal > ATTNCHECK_CAUSAL_BOTTOM_RIGHT)
    return "causal is not one of ATTNCHECK_CAUSAL_NONE, _TOP_LEFT, _BOTTOM_RIGHT";
  // Dense temporaries (widened copies, scores, lse) must fit in int64 (and in memory).
  const int64_t limit = std::numeric_limits<int64_t>::max() / 8;
  int64_t bh = 0, rows = 0, n = 0;
  if (__builtin_mul_overflow(c.batch, c.heads, &bh) ||
      __builtin_mul_overflow(bh, std::max(c.q_len, c.kv_len), &rows) ||
      __builtin_mul_overflow(rows, std::max({c.head_dim, c.value_dim, c.kv_len}), &n) || n > limit)
    return "tensor sizes overflow";
  struct Named { const char* name; const int64_t (&stride)[4]; int64_t heads, rows, cols; bool present; };
  const Named views[] = {
      {"q", c.q.stride, c.heads, c.q_len, c.head_dim, true},
      {"k", c.k.stride, c.kv_heads, c.kv_len, c.head_dim, true},
      {"v", c.v.stride, c.kv_heads, c.kv_len, c.value_dim, true},
      {"out", c.out.stride, c.heads, c.q_len, c.value_dim, true},
      {"mask", c.mask.stride, c.heads, c.q_len, c.kv_len, c.mask.data != nullptr},
      {"bias", c.bias.stride, c.heads, c.q_len, c.kv_len, c.bias.data != nullptr},
  };
  for (const Named& view : views) {
    if (!view.present) continue;
    for (int64_t s : view.stride)
      if (s < 0) return std::string(view.name) + " has a negative stride";
    if (view.stride[3] != 1) return std::string(view.name) + ".stride[3] must be 1";
    const int64_t extents[4] = {c.batch, view.heads, view.rows, view.cols};
    const int64_t last = view_extent(view.stride, extents);
    if (last < 0 || last > limit) return std::string(view.name) + "'s strides overflow";
  }
  for (int64_t b = 0; b < c.batch; ++b) {
    if (c.q_lens && (c.q_lens[b] < 0 || c.q_lens[b] > c.q_len))
      return "q_lens[" + std::to_string(b) + "] = " + std::to_string(c.q_lens[b]) + " is outside [0, q_len]";
    if (c.kv_lens && (c.kv_lens[b] < 0 || c.kv_lens[b] > c.kv_len))
      return "kv_lens[" + std::to_string(b) + "] = " + std::to_string(c.kv_lens[b]) + " is outside [0, kv_len]";
  }
  if (!std::isfinite(c.softcap) || c.softcap < 0) return "softcap must be 0 (none) or finite and positive";
  for (int64_t h = 0; h < c.heads; ++h) {
    if (c.alibi_slopes && !std::isfinite(c.alibi_slopes[h])) return "alibi_slopes[" + std::to_string(h) + "] is not finite";
    if (c.sinks && !std::isfinite(c.sinks[h])) return "sinks[" + std::to_string(h) + "] is not finite";
  }
  return "";
}

template <class T, class View>
void copy_strides(T& view, const View& from) {
  for (int a = 0; a < 4; ++a) view.stride[a] = from.stride[a];
}

// The typed view with every pointer the caller's own: what f32 and f64 run on,
// and what the widened path starts from before it substitutes its copies.
template <class T>
TypedCallV2<T> typed_view_v2(const attncheck_call_v2& c) {
  TypedCallV2<T> t{};
  t.batch = c.batch, t.heads = c.heads, t.kv_heads = c.kv_heads, t.q_len = c.q_len, t.kv_len = c.kv_len;
  t.head_dim = c.head_dim, t.value_dim = c.value_dim;
  t.q.data = static_cast<const T*>(c.q.data), copy_strides(t.q, c.q);
  t.k.data = static_cast<const T*>(c.k.data), copy_strides(t.k, c.k);
  t.v.data = static_cast<const T*>(c.v.data), copy_strides(t.v, c.v);
  t.out.data = static_cast<T*>(c.out.data), copy_strides(t.out, c.out);
  t.lse = c.lse, t.q_lens = c.q_lens, t.kv_lens = c.kv_lens;
  t.causal = enum_value(c.causal);
  const int64_t wide = c.q_len + c.kv_len;  // admits every key from any diagonal
  t.window_left = c.window_left < 0 ? -1 : std::min(c.window_left, wide);
  t.window_right = c.window_right < 0 ? -1 : std::min(c.window_right, wide);
  t.scale = c.scale, t.softcap = c.softcap;
  t.mask.data = c.mask.data ? static_cast<const uint8_t*>(c.mask.data) : nullptr, copy_strides(t.mask, c.mask);
  t.bias.data = static_cast<const T*>(c.bias.data), copy_strides(t.bias, c.bias);
  t.alibi_slopes = c.alibi_slopes, t.sinks = c.sinks;
  return t;
}

// Runs kernel(view) and maps a void kernel to ATTNCHECK_OK.
template <class Kernel, class T>
int run_kernel_v2(Kernel& kernel, const TypedCallV2<T>& view) {
  if constexpr (std::is_void_v<decltype(kernel(view))>) {
    kernel(view);
    return ATTNCHECK_OK;
  } else {
    return kernel(view);
  }
}

// Dense float copy of a half-precision view with extents {batch, heads, rows,
// cols}, read element by element through its strides; `into` gets the copy's
// dense strides. An axis of stride 0 (a broadcast mask or bias) keeps stride 0
// and is copied once.
template <class Half>
std::vector<float> widen_view(const attncheck_view& from, const int64_t (&extents)[4], StridedView<float>& into) {
  int64_t kept[4];
  for (int a = 0; a < 4; ++a) kept[a] = from.stride[a] == 0 && a < 3 ? 1 : extents[a];
  const int64_t dense[4] = {kept[1] * kept[2] * kept[3], kept[2] * kept[3], kept[3], 1};
  std::vector<float> wide(static_cast<std::size_t>(kept[0] * dense[0]));
  const auto* bits = static_cast<const uint16_t*>(from.data);
  for (int64_t b = 0; b < kept[0]; ++b)
    for (int64_t h = 0; h < kept[1]; ++h)
      for (int64_t r = 0; r < kept[2]; ++r) {
        const uint16_t* src = bits + b * from.stride[0] + h * from.stride[1] + r * from.stride[2];
        float* dst = wide.data() + b * dense[0] + h * dense[1] + r * dense[2];
        for (int64_t c = 0; c < kept[3]; ++c) dst[c] = static_cast<float>(Eigen::numext::bit_cast<Half>(src[c]));
      }
  for (int a = 0; a < 4; ++a) into.stride[a] = from.stride[a] == 0 && a < 3 ? 0 : dense[a];
  into.data = wide.data();
  return wide;
}

// Half-precision storage (Eigen::half or Eigen::bfloat16) widened to float,
// computed by the float kernel into a dense float out, rounded back to
// nearest-even into the live rows (i < Lq) of the call's out.
// A packed side (v3) is widened whole, [total][heads][cols] (stride[0] is 0:
// one "batch"), and its copy keeps the cu offsets.
template <class Half, class Kernel>
int run_widened_v2(const attncheck_call_v2& c, Kernel& kernel, const attncheck_call_v3* v3 = nullptr) {
  TypedCallV2<float> t = typed_view_v2<float>(c);
  const int32_t* cu_q = v3 ? v3->cu_seqlens_q : nullptr;
  const int32_t* cu_k = v3 ? v3->cu_seqlens_k : nullptr;
  const int64_t q_rows = cu_q ? v3->total_q : c.q_len, k_rows = cu_k ? v3->total_k : c.kv_len;
  const std::vector<float> q = widen_view<Half>(c.q, {c.batch, c.heads, q_rows, c.head_dim}, t.q);
  const std::vector<float> k = widen_view<Half>(c.k, {c.batch, c.kv_heads, k_rows, c.head_dim}, t.k);
  const std::vector<float> v = widen_view<Half>(c.v, {c.batch, c.kv_heads, k_rows, c.value_dim}, t.v);
  t.cu_q = t.q.cu = cu_q;
  t.cu_k = t.k.cu = t.v.cu = cu_k;
  t.alibi_batch_stride = v3 ? v3->alibi_batch_stride : 0;
  std::vector<float> bias;
  if (c.bias.data) bias = widen_view<Half>(c.bias, {c.batch, c.heads, c.q_len, c.kv_len}, t.bias);
  std::vector<float> out(static_cast<std::size_t>(c.batch * c.heads * c.q_len * c.value_dim));
  t.out.data = out.data();
  const int64_t out_dense[4] = {c.heads * c.q_len * c.value_dim, c.q_len * c.value_dim, c.value_dim, 1};
  std::copy(std::begin(out_dense), std::end(out_dense), t.out.stride);

  const int rc = run_kernel_v2(kernel, t);
  if (rc != ATTNCHECK_OK) return rc;
  auto* dst = static_cast<uint16_t*>(c.out.data);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < t.q_len_of(b); ++i) {
        const float* src = t.out.row(b, h, i);
        uint16_t* row = dst + b * c.out.stride[0] + h * c.out.stride[1] + (i + (cu_q ? cu_q[b] : 0)) * c.out.stride[2];
        for (int64_t col = 0; col < c.value_dim; ++col) row[col] = Eigen::numext::bit_cast<uint16_t>(Half(src[col]));
      }
  return ATTNCHECK_OK;
}

}  // namespace detail

// Validates the call, picks T from call->dtype and runs kernel(const
// TypedCallV2<T>&) for T = float (f32, f16, bf16) or double (f64). The kernel
// returns void (always succeeds) or an ABI return code, having written err
// itself. An invalid call gets "invalid call: ..." and kCallError. No
// exception escapes: the caller may be C.
template <class Kernel>
int dispatch_v2(const attncheck_call_v2* call, char* err, std::size_t err_len, Kernel&& kernel) {
  try {
    if (const std::string defect = detail::call_v2_defect(call); !defect.empty())
      return report(err, err_len, kCallError, "invalid call: %s", defect.c_str());
    const attncheck_call_v2& c = *call;
    switch (detail::enum_value(c.dtype)) {
      case ATTNCHECK_F32: return detail::run_kernel_v2(kernel, detail::typed_view_v2<float>(c));
      case ATTNCHECK_F64: return detail::run_kernel_v2(kernel, detail::typed_view_v2<double>(c));
      case ATTNCHECK_F16: return detail::run_widened_v2<Eigen::half>(c, kernel);
      case ATTNCHECK_BF16: return detail::run_widened_v2<Eigen::bfloat16>(c, kernel);
    }
    return report(err, err_len, ATTNCHECK_UNSUPPORTED, "dtype %d is not offered", detail::enum_value(c.dtype));
  } catch (const std::bad_alloc&) {
    return report(err, err_len, kCallError, "out of memory");
  } catch (const std::exception& e) {
    return report(err, err_len, kCallError, "%s", e.what());
  }
}

namespace detail {

// What a packed v3 call must hold (docs/abi/plugin-abi-v3.md, "Packed
// batches"); "" when usable. The rest of version 3 is not computed by the
// built-ins: a non-neutral field of it is refused as unsupported by the caller.
inline std::string packing_defect(const attncheck_call_v3& c) {
  const attncheck_call_v2& v = c.v2;
  struct Side { const char* name; const int32_t* cu; int64_t total, bound; const attncheck_view* views[2]; };
  const Side sides[] = {{"cu_seqlens_q", c.cu_seqlens_q, c.total_q, v.q_len, {&v.q, nullptr}},
                        {"cu_seqlens_k", c.cu_seqlens_k, c.total_k, v.kv_len, {&v.k, &v.v}}};
  for (const Side& s : sides) {
    if (!s.cu) {
      if (s.total != 0) return std::string(s.name) + " is NULL but its total is not 0";
      continue;
    }
    if (s.cu[0] != 0) return std::string(s.name) + "[0] is not 0";
    for (int64_t b = 0; b < v.batch; ++b)
      if (s.cu[b + 1] < s.cu[b] || s.cu[b + 1] - s.cu[b] > s.bound)
        return std::string(s.name) + "[" + std::to_string(b + 1) + "] makes a slot outside 0..q_len (kv_len)";
    if (s.total < std::max<int64_t>(1, s.cu[v.batch])) return std::string(s.name) + "[batch] is past its total";
    for (const attncheck_view* view : s.views)
      if (view && view->stride[0] != 0) return std::string(s.name) + " is given but a packed view's stride[0] is not 0";
  }
  if (c.cu_seqlens_q && v.out.stride[0] != 0) return "cu_seqlens_q is given but out.stride[0] is not 0";
  for (int64_t b = 0; b < v.batch; ++b) {
    if (c.cu_seqlens_q && v.q_lens && v.q_lens[b] > c.cu_seqlens_q[b + 1] - c.cu_seqlens_q[b])
      return "q_lens[" + std::to_string(b) + "] is longer than its packed slot";
    if (c.cu_seqlens_k && v.kv_lens && v.kv_lens[b] > c.cu_seqlens_k[b + 1] - c.cu_seqlens_k[b])
      return "kv_lens[" + std::to_string(b) + "] is longer than its packed slot";
  }
  return "";
}

// Any added field of version 3 but the packing's is not neutral.
inline const char* unsupported_v3_field(const attncheck_call_v3& c) {
  if (c.block_table || c.max_pages_per_seq || c.num_pages || c.page_size) return "paged K and V";
  if (detail::enum_value(c.k_format) != ATTNCHECK_KV_DTYPE || detail::enum_value(c.v_format) != ATTNCHECK_KV_DTYPE ||
      c.k_scale.data || c.v_scale.data)
    return "K and V formats other than DTYPE";
  return nullptr;
}

template <class T>
TypedCallV2<T> typed_view_v3(const attncheck_call_v3& c) {
  TypedCallV2<T> t = typed_view_v2<T>(c.v2);
  t.cu_q = t.q.cu = t.out.cu = c.cu_seqlens_q;
  t.cu_k = t.k.cu = t.v.cu = c.cu_seqlens_k;
  t.alibi_batch_stride = c.alibi_batch_stride;
  return t;
}

// What a call with ALiBi per (batch, head) must hold (docs/abi/plugin-abi-v3.md,
// "ALiBi per (batch, head)"): a stride of 0 or at least heads, only with
// slopes, and every slope read finite.
inline std::string alibi_batch_defect(const attncheck_call_v3& c) {
  const int64_t stride = c.alibi_batch_stride;
  if (stride == 0) return "";
  if (!c.v2.alibi_slopes) return "alibi_batch_stride is not 0 but alibi_slopes is NULL";
  if (stride < c.v2.heads)
    return "alibi_batch_stride " + std::to_string(stride) + " is neither 0 nor at least heads";
  for (int64_t b = 0; b < c.v2.batch; ++b)
    for (int64_t h = 0; h < c.v2.heads; ++h)
      if (!std::isfinite(c.v2.alibi_slopes[b * stride + h]))
        return "alibi_slopes[" + std::to_string(b) + " * alibi_batch_stride + " + std::to_string(h) + "] is not finite";
  return "";
}

}  // namespace detail

// dispatch_v2 for a version-3 call whose added fields are the packing's
// (cu_seqlens_q/k, total_q/k), the paging's (block_table and its sizes: the
// keys gathered first), the formats', alibi_batch_stride (slope(b, h)) or neutral: the kernel reads packed rows through the
// views' cu and lengths through q_len_of / kv_len_of. Any other version-3
// field is answered ATTNCHECK_UNSUPPORTED, naming it.
template <class Kernel>
int dispatch_v3(const attncheck_call_v3* call, char* err, std::size_t err_len, Kernel&& kernel) {
  try {
    if (!call) return report(err, err_len, kCallError, "invalid call: call is NULL");
    // Paged keys (impls/paged_gather.h): gathered through the table into
    // dense copies, then computed as the same keys padded.
    detail::PagedCopies copies;
    attncheck_call_v3 unpaged{};
    if (call->block_table || call->max_pages_per_seq || call->num_pages || call->page_size) {
      if (const std::string defect = detail::paging_defect(*call); !defect.empty())
        return report(err, err_len, kCallError, "invalid call: %s", defect.c_str());
      unpaged = detail::gather_paged(*call, copies);
      call = &unpaged;
    }
    // Stored K and V formats (impls/kv_format_gather.h): decoded to their real values,
    // rounded once to the dtype, then computed as version 2.
    detail::KvDecodedCopies decoded;
    attncheck_call_v3 plain{};
    if (detail::kv_formats_in_use(*call)) {
      if (const std::string defect = detail::kv_format_defect(*call); !defect.empty())
        return report(err, err_len, kCallError, "invalid call: %s", defect.c_str());
      plain = detail::decode_kv_formats(*call, decoded);
      call = &plain;
    }
    if (const std::string defect = detail::call_v2_defect(&call->v2); !defect.empty())
      return report(err, err_len, kCallError, "invalid call: %s", defect.c_str());
    if (const std::string defect = detail::packing_defect(*call); !defect.empty())
      return report(err, err_len, kCallError, "invalid call: %s", defect.c_str());
    if (const std::string defect = detail::alibi_batch_defect(*call); !defect.empty())
      return report(err, err_len, kCallError, "invalid call: %s", defect.c_str());
    if (const char* field = detail::unsupported_v3_field(*call))
      return report(err, err_len, ATTNCHECK_UNSUPPORTED, "%s: not offered", field);
    const attncheck_call_v3& c = *call;
    switch (detail::enum_value(c.v2.dtype)) {
      case ATTNCHECK_F32: return detail::run_kernel_v2(kernel, detail::typed_view_v3<float>(c));
      case ATTNCHECK_F64: return detail::run_kernel_v2(kernel, detail::typed_view_v3<double>(c));
      case ATTNCHECK_F16: return detail::run_widened_v2<Eigen::half>(c.v2, kernel, &c);
      case ATTNCHECK_BF16: return detail::run_widened_v2<Eigen::bfloat16>(c.v2, kernel, &c);
    }
    return report(err, err_len, ATTNCHECK_UNSUPPORTED, "dtype %d is not offered", detail::enum_value(c.v2.dtype));
  } catch (const std::bad_alloc&) {
    return report(err, err_len, kCallError, "out of memory");
  } catch (const std::exception& e) {
    return report(err, err_len, kCallError, "%s", e.what());
  }
}

// A v1 call as the v2 call that means the same: kv_heads = heads, dense BHSD
// views, every v2 field neutral. The v1 entry points of the references
// validate with v1's rules (typed_call.h) and then run their v2 kernel on this.
inline attncheck_call_v2 v2_from_v1(const attncheck_call& c) {
  attncheck_call_v2 v2{};
  v2.dtype = c.dtype;
  v2.batch = c.batch, v2.heads = c.heads, v2.kv_heads = c.heads, v2.q_len = c.q_len, v2.kv_len = c.kv_len;
  v2.head_dim = c.head_dim, v2.value_dim = c.value_dim;
  const auto dense = [&](int64_t rows, int64_t cols, int64_t (&stride)[4]) {
    stride[0] = c.heads * rows * cols, stride[1] = rows * cols, stride[2] = cols, stride[3] = 1;
  };
  v2.q.data = c.q, dense(c.q_len, c.head_dim, v2.q.stride);
  v2.k.data = c.k, dense(c.kv_len, c.head_dim, v2.k.stride);
  v2.v.data = c.v, dense(c.kv_len, c.value_dim, v2.v.stride);
  v2.out.data = c.out, dense(c.q_len, c.value_dim, v2.out.stride);
  v2.causal = c.causal;
  v2.window_left = -1, v2.window_right = -1;
  v2.scale = c.scale;
  v2.softcap = 0;
  v2.mask.data = c.mask;
  if (c.mask) dense(c.q_len, c.kv_len, v2.mask.stride);
  return v2;
}

// The v1 entry point of a built-in that computes through its v2 forward:
// v1's validation and messages, then forward_v2 on the equivalent v2 call.
inline int forward_v1_via_v2(const attncheck_call* call, char* err, std::size_t err_len,
                             int (*forward_v2)(const attncheck_call_v2*, char*, std::size_t)) {
  if (const char* defect = detail::call_defect(call); *defect)
    return report(err, err_len, kCallError, "invalid call: %s", defect);
  const attncheck_call_v2 v2 = v2_from_v1(*call);
  return forward_v2(&v2, err, err_len);
}

}  // namespace attncheck
