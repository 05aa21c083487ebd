// The ABI call seen with typed pointers, and the one place where the built-ins
// turn a dtype into arithmetic: f32 and f64 run natively, f16 and bf16 are
// widened to float, run through the float kernel and rounded back. Keeping the
// conversion here means no kernel can get it subtly different from another.
//
// Example usage (a kernel written once as a template over float/double):
//   template <class T> void my_kernel(const TypedCall<T>& c) { ... }
//   int my_forward(const attncheck_call* call, char* err, size_t err_len) {
//     return dispatch(call, err, err_len, [](const auto& c) { my_kernel(c); });
//   }
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "attncheck/plugin.h"
#include "problem/visibility.h"

namespace attncheck {

// Returned for a call that breaks the ABI's own contract (null pointer,
// non-positive extent): a caller bug, so an error rather than "unsupported".
inline constexpr int kCallError = 2;

// Writes a NUL-terminated message into the caller's err buffer (which may be
// absent) and returns `code`, so kernels can `return report(...)`.
template <class... Args>
int report(char* err, std::size_t err_len, int code, const char* format, Args... args) {
  if (!err || err_len == 0) return code;
  if constexpr (sizeof...(Args) == 0)
    std::snprintf(err, err_len, "%s", format);
  else
    std::snprintf(err, err_len, format, args...);
  return code;
}

// A typed view of one call: same fields as attncheck_call, pointers cast to T.
// For f16/bf16 calls, T is float and q/k/v/out point at widened copies.
template <class T>
struct TypedCall {
  int64_t batch, heads, q_len, kv_len, head_dim, value_dim;
  attncheck_causal causal;
  double scale;          // as passed: NaN means the default 1/sqrt(head_dim)
  const T* q;            // [batch*heads][q_len][head_dim]
  const T* k;            // [batch*heads][kv_len][head_dim]
  const T* v;            // [batch*heads][kv_len][value_dim]
  const uint8_t* mask;   // [batch*heads][q_len][kv_len] or nullptr
  T* out;                // [batch*heads][q_len][value_dim]

  int64_t heads_total() const { return batch * heads; }  // `bh` runs over [0, heads_total())
  // The scale the ABI asks for, computed in double and then rounded to T once.
  T abi_scale() const {
    return static_cast<T>(std::isnan(scale) ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : scale);
  }

  // Start of head bh's block of each tensor; row r of it is at r * (row length).
  const T* q_head(int64_t bh) const { return q + bh * q_len * head_dim; }
  const T* k_head(int64_t bh) const { return k + bh * kv_len * head_dim; }
  const T* v_head(int64_t bh) const { return v + bh * kv_len * value_dim; }
  T* out_head(int64_t bh) const { return out + bh * q_len * value_dim; }
  // [q_len][kv_len] for head bh, or nullptr when there is no mask.
  const uint8_t* mask_head(int64_t bh) const { return mask ? mask + bh * q_len * kv_len : nullptr; }
};

// Query i of head bh may attend to key j: the causal rule and the mask agree.
// `Call` is attncheck_call or TypedCall<T>: both carry these fields.
template <class Call>
inline bool visible(const Call& call, int64_t bh, int64_t i, int64_t j) {
  if (j >= causal_key_end(call.causal, call.q_len, call.kv_len, i)) return false;
  return !call.mask || call.mask[(bh * call.q_len + i) * call.kv_len + j] != 0;
}

namespace detail {

// The raw integer of an ABI enum field. A C caller may store any int there, and
// loading an out-of-range value as the C++ enum type is undefined behaviour.
template <class Enum>
int enum_value(const Enum& field) {
  std::underlying_type_t<Enum> raw;
  static_assert(sizeof raw == sizeof field);
  std::memcpy(&raw, &field, sizeof raw);
  return static_cast<int>(raw);
}

// Checks what every kernel relies on; "" when the call is usable.
inline const char* call_defect(const attncheck_call* call) {
  if (!call) return "call is NULL";
  if (call->batch <= 0 || call->heads <= 0 || call->q_len <= 0 || call->kv_len <= 0 ||
      call->head_dim <= 0 || call->value_dim <= 0)
    return "every extent must be positive";
  if (!call->q || !call->k || !call->v || !call->out) return "q, k, v and out must not be NULL";
  if (const int causal = enum_value(call->causal); causal < ATTNCHECK_CAUSAL_NONE || causal > ATTNCHECK_CAUSAL_BOTTOM_RIGHT)
    return "causal is not one of ATTNCHECK_CAUSAL_NONE, _TOP_LEFT, _BOTTOM_RIGHT";
  // Element counts of the largest tensors must fit in int64 (and in memory).
  const int64_t limit = std::numeric_limits<int64_t>::max() / 8;
  int64_t bh = 0, rows = 0, n = 0;
  if (__builtin_mul_overflow(call->batch, call->heads, &bh) ||
      __builtin_mul_overflow(bh, std::max(call->q_len, call->kv_len), &rows) ||
      __builtin_mul_overflow(rows, std::max({call->head_dim, call->value_dim, call->kv_len}), &n) ||
      n > limit)
    return "tensor sizes overflow";
  return "";
}

template <class T>
TypedCall<T> typed_view(const attncheck_call& c, const T* q, const T* k, const T* v, T* out) {
  return {c.batch, c.heads, c.q_len, c.kv_len, c.head_dim, c.value_dim, c.causal, c.scale,
          q, k, v, c.mask, out};
}

// Runs kernel(view) and maps a void kernel to ATTNCHECK_OK.
template <class Kernel, class T>
int run_kernel(Kernel& kernel, const TypedCall<T>& view) {
  if constexpr (std::is_void_v<decltype(kernel(view))>) {
    kernel(view);
    return ATTNCHECK_OK;
  } else {
    return kernel(view);
  }
}

// Half-precision storage (Eigen::half or Eigen::bfloat16) widened to float,
// computed by the float kernel, rounded back to nearest-even.
template <class Half, class Kernel>
int run_widened(const attncheck_call& c, Kernel& kernel) {
  const auto widen = [](const void* src, int64_t n) {
    const auto* bits = static_cast<const uint16_t*>(src);
    std::vector<float> wide(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) wide[i] = static_cast<float>(Eigen::numext::bit_cast<Half>(bits[i]));
    return wide;
  };
  const int64_t bh = c.batch * c.heads;
  const std::vector<float> q = widen(c.q, bh * c.q_len * c.head_dim);
  const std::vector<float> k = widen(c.k, bh * c.kv_len * c.head_dim);
  const std::vector<float> v = widen(c.v, bh * c.kv_len * c.value_dim);
  std::vector<float> out(static_cast<std::size_t>(bh * c.q_len * c.value_dim));
  const int rc = run_kernel(kernel, typed_view<float>(c, q.data(), k.data(), v.data(), out.data()));
  if (rc != ATTNCHECK_OK) return rc;
  auto* dst = static_cast<uint16_t*>(c.out);
  for (std::size_t i = 0; i < out.size(); ++i) dst[i] = Eigen::numext::bit_cast<uint16_t>(Half(out[i]));
  return ATTNCHECK_OK;
}

}  // namespace detail

// Validates the call, picks T from call->dtype and runs kernel(const TypedCall<T>&)
// for T = float (f32, f16, bf16) or double (f64). The kernel returns void (always
// succeeds) or an ABI return code, having written err itself. No exception
// escapes: the caller may be C.
template <class Kernel>
int dispatch(const attncheck_call* call, char* err, std::size_t err_len, Kernel&& kernel) {
  if (const char* defect = detail::call_defect(call); *defect)
    return report(err, err_len, kCallError, "invalid call: %s", defect);
  const attncheck_call& c = *call;
  try {
    switch (detail::enum_value(c.dtype)) {
      case ATTNCHECK_F32:
        return detail::run_kernel(kernel, detail::typed_view<float>(
            c, static_cast<const float*>(c.q), static_cast<const float*>(c.k),
            static_cast<const float*>(c.v), static_cast<float*>(c.out)));
      case ATTNCHECK_F64:
        return detail::run_kernel(kernel, detail::typed_view<double>(
            c, static_cast<const double*>(c.q), static_cast<const double*>(c.k),
            static_cast<const double*>(c.v), static_cast<double*>(c.out)));
      case ATTNCHECK_F16: return detail::run_widened<Eigen::half>(c, kernel);
      case ATTNCHECK_BF16: return detail::run_widened<Eigen::bfloat16>(c, kernel);
    }
  } catch (const std::bad_alloc&) {
    return report(err, err_len, kCallError, "out of memory");
  } catch (const std::exception& e) {
    return report(err, err_len, kCallError, "%s", e.what());
  }
  return report(err, err_len, ATTNCHECK_UNSUPPORTED, "dtype %d is not offered", detail::enum_value(c.dtype));
}

}  // namespace attncheck
