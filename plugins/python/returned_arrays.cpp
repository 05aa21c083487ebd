#include "returned_arrays.h"

#include <Eigen/Core>
#include <cstdint>
#include <cstring>
#include <vector>

namespace pybridge {

namespace {

std::string text_of(PyObject* o) {
  Ref s(PyObject_Str(o));
  const char* u = s ? PyUnicode_AsUTF8(s.get()) : nullptr;
  PyErr_Clear();
  return u ? u : "?";
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

// `x` as a C-contiguous array of `type` holding the returned values, checked for
// its shape and for being a float array; null (and `error`) when it is not.
Ref checked(const Target& t, PyObject* x, const char* what, const std::vector<int64_t>& want, const char* axes,
            int type, std::string& error) {
  Ref as_numpy(PyObject_CallMethod(t.runtime, "to_numpy", "Os", x, what));
  if (!as_numpy) {
    error = take_exception_text(t, 1000);
    return Ref();
  }
  auto* a = reinterpret_cast<PyArrayObject*>(as_numpy.get());
  std::vector<int64_t> got(PyArray_DIMS(a), PyArray_DIMS(a) + PyArray_NDIM(a));
  const std::string dtype = text_of(reinterpret_cast<PyObject*>(PyArray_DESCR(a)));
  if (got != want || !PyArray_ISFLOAT(a)) {
    error = std::string("the function returned ") + what + " of shape " + shape_text(got) + " and dtype " + dtype +
            "; expected shape " + shape_text(want) + " = " + axes + " and a float dtype";
    return Ref();
  }
  Ref cast(PyArray_FROM_OTF(as_numpy.get(), type, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST));
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

template <class Src>
void write_out(const attncheck_call_v2& c, const Src* src) {
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t rows = c.q_lens ? c.q_lens[b] : c.q_len;
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < rows; ++i) {
        const Src* row = src + ((b * c.heads + h) * c.q_len + i) * c.value_dim;
        const int64_t at = b * c.out.stride[0] + h * c.out.stride[1] + i * c.out.stride[2];
        for (int64_t j = 0; j < c.value_dim; ++j) store(c.dtype, c.out.data, at + j, row[j]);
      }
  }
}

}  // namespace

int write_result(const Target& t, const attncheck_call_v2& c, PyObject* result, std::string& error) {
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
  const int type = c.dtype == ATTNCHECK_F64 ? NPY_FLOAT64 : NPY_FLOAT32;
  Ref o = checked(t, out, "out", {c.batch, c.heads, c.q_len, c.value_dim}, "[batch, heads, q_len, value_dim]", type,
                  error);
  if (!o) return 2;
  Ref l;
  if (lse) {
    l = checked(t, lse, "lse", {c.batch, c.heads, c.q_len}, "[batch, heads, q_len]", NPY_FLOAT32, error);
    if (!l) return 2;
  }
  void* data = PyArray_DATA(reinterpret_cast<PyArrayObject*>(o.get()));
  if (type == NPY_FLOAT64)
    write_out(c, static_cast<const double*>(data));
  else
    write_out(c, static_cast<const float*>(data));
  if (l && c.lse) {
    const float* src = static_cast<const float*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(l.get())));
    for (int64_t b = 0; b < c.batch; ++b) {
      const int64_t rows = c.q_lens ? c.q_lens[b] : c.q_len;
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t at = (b * c.heads + h) * c.q_len + i;
          c.lse[at] = src[at];
        }
    }
  }
  return ATTNCHECK_OK;
}

}  // namespace pybridge
