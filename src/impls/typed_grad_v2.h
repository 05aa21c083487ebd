// The ABI v2 backward call (attncheck_call_v2 + attncheck_grad) seen with
// typed, strided pointers, its validation, and the one place where the
// built-ins' backward passes turn a dtype into arithmetic, as typed_call_v2.h
// does for forward: f32 and f64 read dout and write dq, dk, dv in place
// through their strides; f16 and bf16 are widened to float (q, k, v, bias and
// out as forward widens them, out being an input here, and dout), computed by
// the float kernel into dense float gradients and rounded to nearest-even into
// the live elements of dq (rows i < Lq) and dk, dv (keys j < Lk) only: padding
// and gaps are never written, out and lse never.
//
// Example usage (a kernel written once as a template over float/double):
//   template <class T> void my_backward(const TypedCallV2<T>& c, const TypedGradV2<T>& g) { ... }
//   int my_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
//     return dispatch_backward_v2(call, grad, err, err_len, [](const auto& c, const auto& g) { my_backward(c, g); });
//   }
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "attncheck/plugin_v2.h"
#include "impls/typed_call_v2.h"

namespace attncheck {

// The gradient views of one backward call, typed. The kernel overwrites the
// live elements of dq, dk and dv (zeros where nothing flows) and nothing else.
template <class T>
struct TypedGradV2 {
  StridedView<T> dout;   // [batch][heads][q_len][value_dim]: read live rows only (padding may be NaN)
  StridedOutView<T> dq;  // [batch][heads][q_len][head_dim]: write rows i < Lq only
  StridedOutView<T> dk;  // [batch][kv_heads][kv_len][head_dim]: write keys j < Lk only
  StridedOutView<T> dv;  // [batch][kv_heads][kv_len][value_dim]: write keys j < Lk only
};

namespace detail {

// Checks the gradient views; "" when usable. The call itself is checked by
// call_v2_defect first (extents, lengths), so the extents here are valid.
inline std::string grad_v2_defect(const attncheck_call_v2& c, const attncheck_grad* grad) {
  if (!grad) return "grad is NULL";
  const attncheck_grad& g = *grad;
  if (!g.dout.data || !g.dq.data || !g.dk.data || !g.dv.data) return "dout, dq, dk and dv must not be NULL";
  const int64_t limit = std::numeric_limits<int64_t>::max() / 8;
  struct Named { const char* name; const int64_t (&stride)[4]; int64_t heads, rows, cols; };
  const Named views[] = {
      {"dout", g.dout.stride, c.heads, c.q_len, c.value_dim},
      {"dq", g.dq.stride, c.heads, c.q_len, c.head_dim},
      {"dk", g.dk.stride, c.kv_heads, c.kv_len, c.head_dim},
      {"dv", g.dv.stride, c.kv_heads, c.kv_len, c.value_dim},
  };
  for (const Named& view : views) {
    for (int64_t s : view.stride)
      if (s < 0) return std::string(view.name) + " has a negative stride";
    if (view.stride[3] != 1) return std::string(view.name) + ".stride[3] must be 1";
    const int64_t extents[4] = {c.batch, view.heads, view.rows, view.cols};
    const int64_t last = view_extent(view.stride, extents);
    if (last < 0 || last > limit) return std::string(view.name) + "'s strides overflow";
  }
  return "";
}

// The typed gradient views with every pointer the caller's own (f32, f64).
template <class T>
TypedGradV2<T> typed_grad_v2(const attncheck_grad& g) {
  TypedGradV2<T> t{};
  t.dout.data = static_cast<const T*>(g.dout.data), copy_strides(t.dout, g.dout);
  t.dq.data = static_cast<T*>(g.dq.data), copy_strides(t.dq, g.dq);
  t.dk.data = static_cast<T*>(g.dk.data), copy_strides(t.dk, g.dk);
  t.dv.data = static_cast<T*>(g.dv.data), copy_strides(t.dv, g.dv);
  return t;
}

// Runs kernel(call, grad) and maps a void kernel to ATTNCHECK_OK.
template <class Kernel, class T>
int run_backward_kernel_v2(Kernel& kernel, const TypedCallV2<T>& call, const TypedGradV2<T>& grad) {
  if constexpr (std::is_void_v<decltype(kernel(call, grad))>) {
    kernel(call, grad);
    return ATTNCHECK_OK;
  } else {
    return kernel(call, grad);
  }
}

// One half-precision output view with a dense float stand-in [batch][heads][rows][cols].
// The stand-in starts as the widened live elements of the call's view (zeros
// elsewhere), so that a kernel which accumulates instead of overwriting does
// so in every dtype; live(b) is the number of live rows (or keys) of batch b.
template <class Half>
struct WidenedOutput {
  std::vector<float> dense;
  int64_t extents[4];

  template <class LiveRows>
  WidenedOutput(const attncheck_out_view& from, int64_t batch, int64_t heads, int64_t rows, int64_t cols,
                StridedOutView<float>& into, LiveRows live)
      : dense(static_cast<std::size_t>(batch * heads * rows * cols), 0.0f), extents{batch, heads, rows, cols} {
    into.data = dense.data();
    into.stride[0] = heads * rows * cols, into.stride[1] = rows * cols, into.stride[2] = cols, into.stride[3] = 1;
    for_live(from, live, [&](const uint16_t* src, float* dst) {
      for (int64_t col = 0; col < cols; ++col) dst[col] = static_cast<float>(Eigen::numext::bit_cast<Half>(src[col]));
    });
  }

  // Rounds the live elements back into the call's view, to nearest-even.
  template <class LiveRows>
  void round_into(const attncheck_out_view& to, LiveRows live) {
    for_live(to, live, [&](uint16_t* dst, const float* src) {
      for (int64_t col = 0; col < extents[3]; ++col) dst[col] = Eigen::numext::bit_cast<uint16_t>(Half(src[col]));
    });
  }

 private:
  // body(row of the call's view, row of the dense stand-in) for every live row.
  template <class LiveRows, class Body>
  void for_live(const attncheck_out_view& view, LiveRows live, Body body) {
    auto* bits = static_cast<uint16_t*>(view.data);
    for (int64_t b = 0; b < extents[0]; ++b)
      for (int64_t h = 0; h < extents[1]; ++h)
        for (int64_t r = 0; r < live(b); ++r)
          body(bits + b * view.stride[0] + h * view.stride[1] + r * view.stride[2],
               dense.data() + ((b * extents[1] + h) * extents[2] + r) * extents[3]);
  }
};

// Half-precision backward: q, k, v, bias, out and dout widened to float,
// dq, dk, dv computed dense in float and rounded back into their live elements.
template <class Half, class Kernel>
int run_widened_backward_v2(const attncheck_call_v2& c, const attncheck_grad& g, Kernel& kernel) {
  TypedCallV2<float> t = typed_view_v2<float>(c);
  const std::vector<float> q = widen_view<Half>(c.q, {c.batch, c.heads, c.q_len, c.head_dim}, t.q);
  const std::vector<float> k = widen_view<Half>(c.k, {c.batch, c.kv_heads, c.kv_len, c.head_dim}, t.k);
  const std::vector<float> v = widen_view<Half>(c.v, {c.batch, c.kv_heads, c.kv_len, c.value_dim}, t.v);
  std::vector<float> bias;
  if (c.bias.data) bias = widen_view<Half>(c.bias, {c.batch, c.heads, c.q_len, c.kv_len}, t.bias);
  // out is an input of backward: read, never written.
  StridedView<float> out_view;
  const attncheck_view out_in{c.out.data, {c.out.stride[0], c.out.stride[1], c.out.stride[2], c.out.stride[3]}};
  std::vector<float> out = widen_view<Half>(out_in, {c.batch, c.heads, c.q_len, c.value_dim}, out_view);
  t.out.data = out.data();
  std::copy(std::begin(out_view.stride), std::end(out_view.stride), t.out.stride);

  TypedGradV2<float> tg{};
  const std::vector<float> dout = widen_view<Half>(g.dout, {c.batch, c.heads, c.q_len, c.value_dim}, tg.dout);
  const auto rows = [&](int64_t b) { return t.q_len_of(b); };
  const auto keys = [&](int64_t b) { return t.kv_len_of(b); };
  WidenedOutput<Half> dq(g.dq, c.batch, c.heads, c.q_len, c.head_dim, tg.dq, rows);
  WidenedOutput<Half> dk(g.dk, c.batch, c.kv_heads, c.kv_len, c.head_dim, tg.dk, keys);
  WidenedOutput<Half> dv(g.dv, c.batch, c.kv_heads, c.kv_len, c.value_dim, tg.dv, keys);

  const int rc = run_backward_kernel_v2(kernel, t, tg);
  if (rc != ATTNCHECK_OK) return rc;
  dq.round_into(g.dq, rows);
  dk.round_into(g.dk, keys);
  dv.round_into(g.dv, keys);
  return ATTNCHECK_OK;
}

}  // namespace detail

// Validates the call and its gradient views, picks T from call->dtype and runs
// kernel(const TypedCallV2<T>&, const TypedGradV2<T>&) for T = float (f32,
// f16, bf16) or double (f64). In the kernel's view, call.out and call.lse are
// the forward's results, inputs here. The kernel returns void or an ABI
// return code. An invalid call gets "invalid call: ..." and kCallError. No
// exception escapes: the caller may be C.
template <class Kernel>
int dispatch_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, std::size_t err_len,
                         Kernel&& kernel) {
  try {
    if (const std::string defect = detail::call_v2_defect(call); !defect.empty())
      return report(err, err_len, kCallError, "invalid call: %s", defect.c_str());
    if (const std::string defect = detail::grad_v2_defect(*call, grad); !defect.empty())
      return report(err, err_len, kCallError, "invalid call: %s", defect.c_str());
    const attncheck_call_v2& c = *call;
    switch (detail::enum_value(c.dtype)) {
      case ATTNCHECK_F32:
        return detail::run_backward_kernel_v2(kernel, detail::typed_view_v2<float>(c), detail::typed_grad_v2<float>(*grad));
      case ATTNCHECK_F64:
        return detail::run_backward_kernel_v2(kernel, detail::typed_view_v2<double>(c),
                                              detail::typed_grad_v2<double>(*grad));
      case ATTNCHECK_F16: return detail::run_widened_backward_v2<Eigen::half>(c, *grad, kernel);
      case ATTNCHECK_BF16: return detail::run_widened_backward_v2<Eigen::bfloat16>(c, *grad, kernel);
    }
    return report(err, err_len, ATTNCHECK_UNSUPPORTED, "dtype %d is not offered", detail::enum_value(c.dtype));
  } catch (const std::bad_alloc&) {
    return report(err, err_len, kCallError, "out of memory");
  } catch (const std::exception& e) {
    return report(err, err_len, kCallError, "%s", e.what());
  }
}

}  // namespace attncheck
