// Element types of the ABI and what their arithmetic can represent: one row
// per dtype (`DTypeInfo`), and every other place in attncheck asks the row.
// Adding a dtype is: the ABI enum (include/attncheck/plugin.h), one row in
// dtype.cpp, one case in the built-ins' typed dispatch (impls/typed_call.h),
// and its tests.
//
// Tensors inside attncheck are held as doubles whose values are exactly
// representable in the problem's dtype; a dtype only matters when a call is
// encoded for an implementation and when error bounds are derived.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attncheck/plugin.h"

namespace attncheck {

enum class DType { f32 = ATTNCHECK_F32, f64 = ATTNCHECK_F64, f16 = ATTNCHECK_F16, bf16 = ATTNCHECK_BF16 };

struct DTypeInfo {
  DType type;
  std::string_view name;  // "f32", as in reports, case files and --dtype
  std::size_t bytes;      // of one stored element (2 for the 16-bit formats)
  double unit_roundoff;   // u of the storage format: 2^-24 (f32), 2^-53 (f64), 2^-11 (f16), 2^-8 (bf16)
  // The dtype its arithmetic runs in as the ABI assumes it is used: 16-bit
  // formats are stored in 16 bits but computed and accumulated in f32.
  DType compute;
  double max_finite, min_normal, min_subnormal;
  // The bytes of a signalling NaN no arithmetic produces (the low `bytes`
  // bytes, little-endian): the marker of an output element never written.
  uint64_t poison_bits;
  // Encodes one element as the ABI stores it (native float/double, or the
  // 16-bit word), rounding to nearest even; and decodes it back to double.
  void (*encode)(double x, void* dst);
  double (*decode)(const void* src);
  // The same for n contiguous elements (dtype_codec.h): the loops every
  // tensor of a call goes through, a row at a time.
  void (*encode_n)(const double* src, int64_t n, uint8_t* dst);
  void (*decode_n)(const uint8_t* src, int64_t n, double* dst);

  bool is_16bit() const { return bytes == 2; }
};

// Every dtype, in ABI order: the rows, and their enum values.
std::span<const DTypeInfo> all_dtypes();
std::vector<DType> every_dtype();
// The row of a dtype; dtypes outside the table cannot be constructed from
// names or case files, so this never fails for a value attncheck made.
const DTypeInfo& info(DType t);

std::optional<DType> dtype_from_name(std::string_view name);
// The row of an ABI enum value as a C caller stored it; nullptr when no dtype has it.
const DTypeInfo* find_dtype(int abi_value);
// "f32, f64, f16, bf16": for messages and --help.
std::string dtype_names(std::string_view separator = ", ");

// The row's fields by name, for call sites that read better that way.
inline std::string_view dtype_name(DType t) { return info(t).name; }
inline std::size_t dtype_bytes(DType t) { return info(t).bytes; }
inline double unit_roundoff(DType t) { return info(t).unit_roundoff; }
inline DType compute_dtype(DType t) { return info(t).compute; }
inline double max_finite(DType t) { return info(t).max_finite; }
inline double min_normal(DType t) { return info(t).min_normal; }
inline double min_subnormal(DType t) { return info(t).min_subnormal; }

// Rounds x to the nearest value of the dtype (ties to even), as the dtype's own
// conversion does; NaN and infinities pass through, overflow goes to infinity.
double round_to(DType t, double x);
// round_to on each of x[0..n) in place, through the row loops (encode_n, then
// decode_n, a chunk at a time): the same values, without a call through the
// row per element (the generators round whole tensors with it).
void round_n(DType t, double* x, int64_t n);

// Encodes / decodes one element as the ABI stores it. `dst`/`src` point to
// dtype_bytes(t) bytes.
inline void encode_element(DType t, double x, void* dst) { info(t).encode(x, dst); }
inline double decode_element(DType t, const void* src) { return info(t).decode(src); }

// The same for n contiguous elements, with one look at the row per call
// rather than per element.
inline void encode_elements(DType t, const double* src, int64_t n, uint8_t* dst) { info(t).encode_n(src, n, dst); }
inline void decode_elements(DType t, const uint8_t* src, int64_t n, double* dst) { info(t).decode_n(src, n, dst); }
// n copies of the dtype's poison marker (DTypeInfo::poison_bits).
void fill_poison(DType t, uint8_t* dst, int64_t n);
// How many of n contiguous elements still hold the poison marker; the index
// of the first of them goes to *first (untouched when there is none).
int64_t count_poison(DType t, const uint8_t* src, int64_t n, int64_t* first);

}  // namespace attncheck
