#include "returned_arrays.h"

#include <Eigen/Core>
#include <cstdint>
#include <cstring>
#include <vector>

namespace pybridge {

namespace {

std::string text_of(PyObject* o) {
  Ref s(PyObject_Str(o));
  PyErr_Clear();
  return s && PyUnicode_Check(s.get()) ? utf8_text(s.get()) : "?";
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

// `x` as a C-contiguous array of `type` holding the returned values, checked for
// its shape and for being a float array; null (and `error`) when it is not.
// `who` is "the function" (forward) or "the backward".
Ref checked(const Target& t, const char* who, PyObject* x, const char* what, const std::vector<int64_t>& want,
            const char* axes, int type, std::string& error) {
  Ref as_numpy(PyObject_CallMethod(t.runtime, "to_numpy", "Os", x, what));
  if (!as_numpy) {
    error = take_exception_text(t, 1000);
    return Ref();
  }
  auto* a = reinterpret_cast<PyArrayObject*>(as_numpy.get());
  std::vector<int64_t> got(PyArray_DIMS(a), PyArray_DIMS(a) + PyArray_NDIM(a));
  const std::string dtype = text_of(reinterpret_cast<PyObject*>(PyArray_DESCR(a)));
  if (got != want || !PyArray_ISFLOAT(a)) {
    error = std::string(who) + " returned " + what + " of shape " + shape_text(got) + " and dtype " + dtype +
            "; expected shape " + shape_text(want) + " = " + axes + " and a float dtype";
    return Ref();
  }
  const char* to = type == NPY_FLOAT64 ? "float64" : "float32";
  Ref cast(PyObject_CallMethod(t.runtime, "converted", "Os", as_numpy.get(), to));
  if (cast && !PyArray_Check(cast.get())) cast = Ref();
  if (!cast) error = std::string("cannot convert the returned ") + what + " (" + dtype + "): " + take_exception_text(t, 800);
  return cast;
}

// Stores one value as the call's dtype: f64 as it is, the others from float,
// f16 and bf16 rounded to nearest even (Eigen's conversions, as dtype.cpp).
template <class Src>
void store(attncheck_dtype t, void* base, int64_t at, Src x) {
  switch (t) {
    case ATTNCHECK_F64: static_cast<double*>(base)[at] = static_cast<double>(x); break;
    case ATTNCHECK_F32: static_cast<float*>(base)[at] = static_cast<float>(x); break;
    case ATTNCHECK_F16:
      static_cast<uint16_t*>(base)[at] = Eigen::numext::bit_cast<uint16_t>(Eigen::half(static_cast<float>(x)));
      break;
    case ATTNCHECK_BF16:
      static_cast<uint16_t*>(base)[at] = Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(static_cast<float>(x)));
      break;
  }
}

// Where one side's rows live (plugin_v3.h, "Slots"): sequence b's slot starts
// at row cu[b] of a packed [total][heads][cols] tensor (cu set), or at row 0 of
// batch entry b of a padded [batch][heads][rows][cols] one; its live rows are
// the first lens[b] (lens set), else the whole slot.
struct Slots {
  int64_t batch, heads, rows, cols;
  const int32_t* lens = nullptr;
  const int32_t* cu = nullptr;  // packed when set
  int64_t first(int64_t b) const { return cu ? cu[b] : 0; }
  int64_t live(int64_t b) const { return lens ? lens[b] : cu ? cu[b + 1] - cu[b] : rows; }
  // Element (b, h, row) of the dense source, in elements.
  int64_t source_at(int64_t b, int64_t h, int64_t row) const {
    return cu ? (row * heads + h) * cols : ((b * heads + h) * rows + row) * cols;
  }
};

// The dense source into `dst` through its strides: only the live rows of each
// slot. Padding rows, packed slack and the views' gaps are not the function's
// to write (plugin_v2.h, plugin_v3.h). A packed view's stride[0] is 0.
template <class Src>
void write_rows(attncheck_dtype t, const attncheck_out_view& dst, const Src* src, const Slots& s) {
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t first = s.first(b), live = s.live(b);
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = first; i < first + live; ++i) {
        const Src* row = src + s.source_at(b, h, i);
        const int64_t at = b * dst.stride[0] + h * dst.stride[1] + i * dst.stride[2];
        for (int64_t j = 0; j < s.cols; ++j) store(t, dst.data, at + j, row[j]);
      }
  }
}

void write_rows(attncheck_dtype t, const attncheck_out_view& dst, PyObject* array, const Slots& s) {
  const void* data = PyArray_DATA(reinterpret_cast<PyArrayObject*>(array));
  if (t == ATTNCHECK_F64)
    write_rows(t, dst, static_cast<const double*>(data), s);
  else
    write_rows(t, dst, static_cast<const float*>(data), s);
}

// NumPy's type the returned arrays are converted to: float64 for f64 calls, else
// float32 (rounded from there to f16 / bf16 by store()).
int conversion_type(attncheck_dtype t) { return t == ATTNCHECK_F64 ? NPY_FLOAT64 : NPY_FLOAT32; }

}  // namespace

int write_result(const Target& t, const attncheck_call_v3& c3, PyObject* result, std::string& error) {
  const attncheck_call_v2& c = c3.v2;
  PyObject* out = result;
  PyObject* lse = nullptr;
  if (t.features & ATTNCHECK_FEATURE_LSE) {
    if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) != 2) {
      error = "the function declares \"lse\" in attncheck_features, so it must return (out, lse); it returned " +
              std::string(Py_TYPE(result)->tp_name) +
              (PyTuple_Check(result) ? " of " + std::to_string(PyTuple_GET_SIZE(result)) + " items" : "");
      return 2;
    }
    out = PyTuple_GET_ITEM(result, 0);
    lse = PyTuple_GET_ITEM(result, 1);
  }
  const int type = conversion_type(c.dtype);
  const Slots q_slots{c.batch, c.heads, c.q_len, c.value_dim, c.q_lens, c3.cu_seqlens_q};
  Ref o = c3.cu_seqlens_q ? checked(t, "the function", out, "out", {c3.total_q, c.heads, c.value_dim},
                                    "[total_q, heads, value_dim] (q is packed)", type, error)
                          : checked(t, "the function", out, "out", {c.batch, c.heads, c.q_len, c.value_dim},
                                    "[batch, heads, q_len, value_dim]", type, error);
  if (!o) return 2;
  Ref l;
  if (lse) {
    l = checked(t, "the function", lse, "lse", {c.batch, c.heads, c.q_len}, "[batch, heads, q_len]", NPY_FLOAT32,
                error);
    if (!l) return 2;
  }
  write_rows(c.dtype, c.out, o.get(), q_slots);
  if (l && c.lse) {
    // lse keeps version 2's dense [batch, heads, q_len], packed q or not: row i of sequence b.
    const float* src = static_cast<const float*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(l.get())));
    for (int64_t b = 0; b < c.batch; ++b) {
      const int64_t rows = q_slots.live(b);
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t at = (b * c.heads + h) * c.q_len + i;
          c.lse[at] = src[at];
        }
    }
  }
  return ATTNCHECK_OK;
}

int write_gradients(const Target& t, const attncheck_call_v2& c, const attncheck_grad& g, PyObject* result,
                    std::string& error) {
  if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) != 3) {
    error = "the backward (attncheck_backward) must return (dq, dk, dv); it returned " +
            std::string(Py_TYPE(result)->tp_name) +
            (PyTuple_Check(result) ? " of " + std::to_string(PyTuple_GET_SIZE(result)) + " items" : "");
    return 2;
  }
  const int type = conversion_type(c.dtype);
  // All three are checked before any is written: a wrong dv leaves dq unwritten too.
  Ref dq = checked(t, "the backward", PyTuple_GET_ITEM(result, 0), "dq", {c.batch, c.heads, c.q_len, c.head_dim},
                   "[batch, heads, q_len, head_dim]", type, error);
  if (!dq) return 2;
  Ref dk = checked(t, "the backward", PyTuple_GET_ITEM(result, 1), "dk", {c.batch, c.kv_heads, c.kv_len, c.head_dim},
                   "[batch, kv_heads, kv_len, head_dim]", type, error);
  if (!dk) return 2;
  Ref dv = checked(t, "the backward", PyTuple_GET_ITEM(result, 2), "dv", {c.batch, c.kv_heads, c.kv_len, c.value_dim},
                   "[batch, kv_heads, kv_len, value_dim]", type, error);
  if (!dv) return 2;
  write_rows(c.dtype, g.dq, dq.get(), Slots{c.batch, c.heads, c.q_len, c.head_dim, c.q_lens});
  write_rows(c.dtype, g.dk, dk.get(), Slots{c.batch, c.kv_heads, c.kv_len, c.head_dim, c.kv_lens});
  write_rows(c.dtype, g.dv, dv.get(), Slots{c.batch, c.kv_heads, c.kv_len, c.value_dim, c.kv_lens});
  return ATTNCHECK_OK;
}

}  // namespace pybridge
