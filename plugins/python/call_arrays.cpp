#include "call_arrays.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace pybridge {

namespace {

int npy_type(attncheck_dtype t) {
  switch (t) {
    case ATTNCHECK_F64: return NPY_FLOAT64;
    case ATTNCHECK_F16: return NPY_FLOAT16;
    default: return NPY_FLOAT32;  // F32, and BF16's float32 copies
  }
}

std::size_t element_bytes(attncheck_dtype t) { return t == ATTNCHECK_F32 ? 4 : t == ATTNCHECK_F64 ? 8 : 2; }

// A read-only array over `data` (no copy): dims and strides in elements of `bytes`.
PyObject* view_of(const void* data, int ndim, const npy_intp* dims, const int64_t* stride, std::size_t bytes,
                  int type) {
  npy_intp strides[4];
  for (int i = 0; i < ndim; ++i) strides[i] = static_cast<npy_intp>(stride[i] * static_cast<int64_t>(bytes));
  return PyArray_New(&PyArray_Type, ndim, const_cast<npy_intp*>(dims), type, strides, const_cast<void*>(data), 0, 0,
                     nullptr);
}

// bf16 has no NumPy type: a dense float32 copy of the view, exact (bf16 is
// float32's top half). ndim 3 or 4; strides in elements.
PyObject* bf16_as_float32(const void* data, int ndim, const npy_intp* dims, const int64_t* stride) {
  PyObject* a = PyArray_SimpleNew(ndim, const_cast<npy_intp*>(dims), NPY_FLOAT32);
  if (!a) return nullptr;
  // As four axes: a 3-axis view is one [1, ...] block.
  const int lead = 4 - ndim;
  npy_intp n[4] = {1, 1, 1, 1};
  int64_t st[4] = {0, 0, 0, 0};
  for (int i = 0; i < ndim; ++i) {
    n[lead + i] = dims[i];
    st[lead + i] = stride[i];
  }
  float* dst = static_cast<float*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(a)));
  const uint16_t* src = static_cast<const uint16_t*>(data);
  for (npy_intp b = 0; b < n[0]; ++b)
    for (npy_intp h = 0; h < n[1]; ++h)
      for (npy_intp r = 0; r < n[2]; ++r)
        for (npy_intp c = 0; c < n[3]; ++c) {
          const uint32_t bits = uint32_t{src[b * st[0] + h * st[1] + r * st[2] + c * st[3]]} << 16;
          std::memcpy(dst++, &bits, 4);
        }
  PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(a), NPY_ARRAY_WRITEABLE);  // read-only, as the views
  return a;
}

// A tensor of the call's dtype: [d0, d1, d2, d3].
PyObject* tensor(attncheck_dtype t, const attncheck_view& v, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
  const npy_intp dims[4] = {d0, d1, d2, d3};
  if (t == ATTNCHECK_BF16) return bf16_as_float32(v.data, 4, dims, v.stride);
  return view_of(v.data, 4, dims, v.stride, element_bytes(t), npy_type(t));
}

// One side's tensor (q, out and dout by cu_seqlens_q; k, v by cu_seqlens_k):
// packed, [total, heads, dim] with row r, head h at h*stride[1] + r*stride[2]
// (a packed view has no batch axis: stride[0] is 0, plugin_v3.h); else version
// 2's [batch, heads, rows, dim].
PyObject* side_tensor(const attncheck_call_v3& c, const attncheck_view& v, bool packed, int64_t total, int64_t heads,
                      int64_t rows, int64_t dim) {
  if (!packed) return tensor(c.v2.dtype, v, c.v2.batch, heads, rows, dim);
  const npy_intp dims[3] = {total, heads, dim};
  const int64_t stride[3] = {v.stride[2], v.stride[1], v.stride[3]};
  if (c.v2.dtype == ATTNCHECK_BF16) return bf16_as_float32(v.data, 3, dims, stride);
  return view_of(v.data, 3, dims, stride, element_bytes(c.v2.dtype), npy_type(c.v2.dtype));
}

// A stored format's codes (ABI v3, KV_FORMATS) as the function gets them:
// [n0, n1, rows, X], or [total, heads, X] packed, where a row is X items of
// the NumPy type below. Strides count units (plugin_v3.h): one uint16 (f16,
// bf16), one byte (fp8, int8; int4's byte holds two channels), one block of 32
// channels (q8_0 34 bytes, q4_0 18), and a row's units are consecutive.
struct StoredKind {
  int type;            // NumPy type of an item: float16, int8 or uint8 (bf16: float32 copies)
  int64_t unit_bytes;  // bytes of one unit
  int64_t channels;    // channels of one unit
};
StoredKind stored_kind(attncheck_kv_format f) {
  switch (f) {
    case ATTNCHECK_KV_F16: return {NPY_FLOAT16, 2, 1};
    case ATTNCHECK_KV_BF16: return {NPY_FLOAT32, 2, 1};
    case ATTNCHECK_KV_INT8: return {NPY_INT8, 1, 1};
    case ATTNCHECK_KV_INT4: return {NPY_UINT8, 1, 2};
    case ATTNCHECK_KV_Q8_0: return {NPY_UINT8, 34, 32};
    case ATTNCHECK_KV_Q4_0: return {NPY_UINT8, 18, 32};
    default: return {NPY_UINT8, 1, 1};  // fp8 e4m3 and e5m2: the code bytes
  }
}

PyObject* stored_tensor(attncheck_kv_format f, const attncheck_view& v, bool packed, int64_t n0, int64_t n1,
                        int64_t rows, int64_t dim) {
  const StoredKind k = stored_kind(f);
  const int64_t units = dim / k.channels;
  const bool blocks = k.unit_bytes > 2 || f == ATTNCHECK_KV_INT4;  // a row of bytes
  const int64_t items = blocks ? units * k.unit_bytes : units;
  const std::size_t item_bytes = blocks ? 1 : static_cast<std::size_t>(k.unit_bytes);
  const int64_t per_unit = blocks ? k.unit_bytes : 1;  // items per unit step of a stride
  if (packed) {
    const npy_intp dims[3] = {n0, n1, items};
    const int64_t stride[3] = {v.stride[2] * per_unit, v.stride[1] * per_unit, 1};
    if (f == ATTNCHECK_KV_BF16) return bf16_as_float32(v.data, 3, dims, stride);
    return view_of(v.data, 3, dims, stride, item_bytes, k.type);
  }
  const npy_intp dims[4] = {n0, n1, rows, items};
  const int64_t stride[4] = {v.stride[0] * per_unit, v.stride[1] * per_unit, v.stride[2] * per_unit, 1};
  if (f == ATTNCHECK_KV_BF16) return bf16_as_float32(v.data, 4, dims, stride);
  return view_of(v.data, 4, dims, stride, item_bytes, k.type);
}

const char* kv_format_name(attncheck_kv_format f) {
  static const char* const kNames[] = {"dtype", "f16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8", "int4", "q8_0", "q4_0"};
  const int i = static_cast<int>(f);
  return i >= 0 && i < 9 ? kNames[i] : "unknown";
}

// A scale (plugin_v3.h's attncheck_scale: channel c of kv head h of batch entry
// b at data[b*stride[0] + h*stride[1] + c*stride[2]], strides 0 broadcasting)
// as a read-only float32 [batch, kv_heads, dim] view, or None.
PyObject* scale_or_none(const attncheck_scale& s, int64_t batch, int64_t kv_heads, int64_t dim) {
  if (!s.data) Py_RETURN_NONE;
  const npy_intp dims[3] = {batch, kv_heads, dim};
  return view_of(s.data, 3, dims, s.stride, 4, NPY_FLOAT32);
}

// A read-only [n] view of int32 or float32 values, or None for NULL.
PyObject* vector_or_none(const void* data, int64_t n, int type) {
  if (!data) Py_RETURN_NONE;
  const npy_intp dims[1] = {n};
  const int64_t stride[1] = {1};
  return view_of(data, 1, dims, stride, 4, type);
}

// The uint8 mask (nonzero = may attend, strides of 0 broadcast) as a dense bool array.
PyObject* mask_or_none(const attncheck_call_v2& c) {
  if (!c.mask.data) Py_RETURN_NONE;
  const npy_intp dims[4] = {c.batch, c.heads, c.q_len, c.kv_len};
  Ref bytes(view_of(c.mask.data, 4, dims, c.mask.stride, 1, NPY_UINT8));
  Ref zero(PyLong_FromLong(0));
  if (!bytes || !zero) return nullptr;
  PyObject* mask = PyObject_RichCompare(bytes.get(), zero.get(), Py_NE);
  if (mask && PyArray_Check(mask)) PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(mask), NPY_ARRAY_WRITEABLE);
  return mask;
}

// The dense float lse [batch, heads, q_len] as a read-only view, or None for NULL.
PyObject* lse_or_none(const attncheck_call_v2& c) {
  if (!c.lse) Py_RETURN_NONE;
  const npy_intp dims[3] = {c.batch, c.heads, c.q_len};
  const int64_t stride[3] = {c.heads * c.q_len, c.q_len, 1};
  return view_of(c.lse, 3, dims, stride, 4, NPY_FLOAT32);
}

const char* causal_name(attncheck_causal c) {
  switch (c) {
    case ATTNCHECK_CAUSAL_TOP_LEFT: return "top_left";
    case ATTNCHECK_CAUSAL_BOTTOM_RIGHT: return "bottom_right";
    default: return "none";
  }
}

// Sets kwargs[name] = value (stolen); false when value is null.
bool put(PyObject* kwargs, const char* name, PyObject* value) {
  Ref v(value);
  return v && PyDict_SetItemString(kwargs, name, v.get()) == 0;
}

// Version 3's keywords, one row per feature that adds fields (docs/python.md):
// each is passed only when the function declares the feature.
bool packed_keywords(const attncheck_call_v3& c, PyObject* kw) {
  // q_len and kv_len are the slots' bounds (max_seqlen_q/k): a packed q has no
  // q_len axis, and the mask, the bias and the returned lse keep [.., q_len, ..].
  return put(kw, "cu_seqlens_q", vector_or_none(c.cu_seqlens_q, c.v2.batch + 1, NPY_INT32)) &&
         put(kw, "cu_seqlens_k", vector_or_none(c.cu_seqlens_k, c.v2.batch + 1, NPY_INT32)) &&
         put(kw, "total_q", PyLong_FromLongLong(c.total_q)) && put(kw, "total_k", PyLong_FromLongLong(c.total_k)) &&
         put(kw, "q_len", PyLong_FromLongLong(c.v2.q_len)) && put(kw, "kv_len", PyLong_FromLongLong(c.v2.kv_len));
}

struct V3Keywords {
  unsigned feature;
  bool (*put)(const attncheck_call_v3&, PyObject*);
};
// PAGED: the table [batch, max_pages_per_seq] (read-only int32; key t of
// sequence b is slot t % page_size of page block_table[b, t // page_size]),
// page_size, num_pages, max_pages_per_seq, and kv_len, the keys' bound (the
// table's rows may hold more pages; entries past a sequence's last page hold
// any valid page). None and zeros for an unpaged call.
bool paged_keywords(const attncheck_call_v3& c, PyObject* kw) {
  PyObject* table = nullptr;
  if (!c.block_table) {
    table = Py_NewRef(Py_None);
  } else {
    const npy_intp dims[2] = {c.v2.batch, c.max_pages_per_seq};
    const int64_t stride[2] = {c.max_pages_per_seq, 1};
    table = view_of(c.block_table, 2, dims, stride, 4, NPY_INT32);
  }
  return put(kw, "block_table", table) && put(kw, "page_size", PyLong_FromLongLong(c.page_size)) &&
         put(kw, "num_pages", PyLong_FromLongLong(c.num_pages)) &&
         put(kw, "max_pages_per_seq", PyLong_FromLongLong(c.max_pages_per_seq)) &&
         put(kw, "kv_len", PyLong_FromLongLong(c.v2.kv_len));
}

// KV_FORMATS: k_format and v_format by name ("dtype", "f16", ..., "q4_0"),
// k_scale and v_scale (float32 [batch, kv_heads, head_dim | value_dim], or
// None for an unscaled format); k and v themselves are then their codes
// (stored_tensor).
bool kv_format_keywords(const attncheck_call_v3& c, PyObject* kw) {
  return put(kw, "k_format", PyUnicode_FromString(kv_format_name(c.k_format))) &&
         put(kw, "v_format", PyUnicode_FromString(kv_format_name(c.v_format))) &&
         put(kw, "k_scale", scale_or_none(c.k_scale, c.v2.batch, c.v2.kv_heads, c.v2.head_dim)) &&
         put(kw, "v_scale", scale_or_none(c.v_scale, c.v2.batch, c.v2.kv_heads, c.v2.value_dim));
}

// ALiBi slopes per (batch, head): alibi_slopes (version 2's keyword) becomes the
// float32 [batch, heads] view of the call's rows, alibi_batch_stride floats apart;
// with a stride of 0 it stays [heads]. (BROADCAST_KV needs no keyword: the k and v
// arrays carry their stride of 0.)
bool alibi_batch_keywords(const attncheck_call_v3& c, PyObject* kw) {
  if (c.alibi_batch_stride == 0 || !c.v2.alibi_slopes) return true;
  const npy_intp dims[2] = {c.v2.batch, c.v2.heads};
  const int64_t stride[2] = {c.alibi_batch_stride, 1};
  return put(kw, "alibi_slopes", view_of(c.v2.alibi_slopes, 2, dims, stride, 4, NPY_FLOAT32));
}

constexpr V3Keywords kV3Keywords[] = {
    {ATTNCHECK_FEATURE_PACKED, packed_keywords},
    {ATTNCHECK_FEATURE_ALIBI_BATCH, alibi_batch_keywords},
    {ATTNCHECK_FEATURE_PAGED, paged_keywords},
    {ATTNCHECK_FEATURE_KV_FORMATS, kv_format_keywords},
};

}  // namespace

bool call_arguments(const attncheck_call_v3& c3, unsigned features, CallArguments& out) {
  const attncheck_call_v2& c = c3.v2;
  const bool packed_q = c3.cu_seqlens_q != nullptr, packed_k = c3.cu_seqlens_k != nullptr;
  Ref q(side_tensor(c3, c.q, packed_q, c3.total_q, c.heads, c.q_len, c.head_dim));
  // Paged k and v: the page pool [num_pages, kv_heads, page_size, dim] (axis 0
  // the page, axis 2 the slot, in the views' own strides: HND and NHD alike).
  // Stored formats: the codes (stored_tensor).
  auto kv = [&](const attncheck_view& view, attncheck_kv_format f, int64_t dim) {
    if (f != ATTNCHECK_KV_DTYPE)
      return c3.block_table ? stored_tensor(f, view, false, c3.num_pages, c.kv_heads, c3.page_size, dim)
             : packed_k     ? stored_tensor(f, view, true, c3.total_k, c.kv_heads, 0, dim)
                            : stored_tensor(f, view, false, c.batch, c.kv_heads, c.kv_len, dim);
    return c3.block_table ? tensor(c.dtype, view, c3.num_pages, c.kv_heads, c3.page_size, dim)
                          : side_tensor(c3, view, packed_k, c3.total_k, c.kv_heads, c.kv_len, dim);
  };
  Ref k(kv(c.k, c3.k_format, c.head_dim));
  Ref v(kv(c.v, c3.v_format, c.value_dim));
  if (!q || !k || !v) return false;
  out.args = Ref(PyTuple_Pack(3, q.get(), k.get(), v.get()));
  out.kwargs = Ref(PyDict_New());
  PyObject* kw = out.kwargs.get();
  if (!out.args || !kw) return false;
  bool ok = put(kw, "mask", mask_or_none(c)) && put(kw, "causal", PyUnicode_FromString(causal_name(c.causal))) &&
            put(kw, "scale", std::isnan(c.scale) ? Py_NewRef(Py_None) : PyFloat_FromDouble(c.scale));
  if (ok && (features & ATTNCHECK_FEATURE_GQA)) ok = put(kw, "kv_heads", PyLong_FromLongLong(c.kv_heads));
  if (ok && (features & ATTNCHECK_FEATURE_LENGTHS))
    ok = put(kw, "q_lens", vector_or_none(c.q_lens, c.batch, NPY_INT32)) &&
         put(kw, "kv_lens", vector_or_none(c.kv_lens, c.batch, NPY_INT32));
  if (ok && (features & ATTNCHECK_FEATURE_WINDOW))
    ok = put(kw, "window_left", PyLong_FromLongLong(c.window_left)) &&
         put(kw, "window_right", PyLong_FromLongLong(c.window_right));
  if (ok && (features & ATTNCHECK_FEATURE_SOFTCAP)) ok = put(kw, "softcap", PyFloat_FromDouble(c.softcap));
  if (ok && (features & ATTNCHECK_FEATURE_BIAS))
    ok = put(kw, "bias", c.bias.data ? tensor(c.dtype, c.bias, c.batch, c.heads, c.q_len, c.kv_len)
                                     : Py_NewRef(Py_None));
  if (ok && (features & ATTNCHECK_FEATURE_ALIBI))
    ok = put(kw, "alibi_slopes", vector_or_none(c.alibi_slopes, c.heads, NPY_FLOAT32));
  if (ok && (features & ATTNCHECK_FEATURE_SINKS)) ok = put(kw, "sinks", vector_or_none(c.sinks, c.heads, NPY_FLOAT32));
  for (const V3Keywords& row : kV3Keywords)
    if (ok && (features & row.feature)) ok = row.put(c3, kw);
  return ok;
}

bool backward_arguments(const attncheck_call_v3& c3, const attncheck_grad& g, unsigned features,
                        CallArguments& out) {
  const attncheck_call_v2& c = c3.v2;
  CallArguments fwd;
  if (!call_arguments(c3, features, fwd)) return false;
  // out is the forward's output, an input here: read-only like q (its padding rows hold any bits).
  const attncheck_view o{c.out.data, {c.out.stride[0], c.out.stride[1], c.out.stride[2], c.out.stride[3]}};
  Ref out_array(tensor(c.dtype, o, c.batch, c.heads, c.q_len, c.value_dim));
  Ref dout(tensor(c.dtype, g.dout, c.batch, c.heads, c.q_len, c.value_dim));
  if (!out_array || !dout) return false;
  PyObject* a = fwd.args.get();
  out.args = Ref(PyTuple_Pack(5, PyTuple_GET_ITEM(a, 0), PyTuple_GET_ITEM(a, 1), PyTuple_GET_ITEM(a, 2),
                              out_array.get(), dout.get()));
  out.kwargs = std::move(fwd.kwargs);
  if (!out.args) return false;
  return !(features & ATTNCHECK_FEATURE_LSE) || put(out.kwargs.get(), "lse", lse_or_none(c));
}

}  // namespace pybridge
