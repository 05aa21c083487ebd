// Element types of the ABI and what their arithmetic can represent.
//
// Tensors inside attncheck are held as doubles whose values are exactly
// representable in the problem's dtype; a dtype only matters when a call is
// encoded for an implementation and when error bounds are derived.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "attncheck/plugin.h"

namespace attncheck {

enum class DType { f32 = ATTNCHECK_F32, f64 = ATTNCHECK_F64, f16 = ATTNCHECK_F16, bf16 = ATTNCHECK_BF16 };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};

std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes of one stored element (2 for the 16-bit formats).
std::size_t dtype_bytes(DType t);

// Unit roundoff u of the storage format: 2^-24 (f32), 2^-53 (f64), 2^-11 (f16), 2^-8 (bf16).
double unit_roundoff(DType t);
// Largest finite, smallest positive normal and smallest positive subnormal value.
double max_finite(DType t);
double min_normal(DType t);
double min_subnormal(DType t);

// Rounds x to the nearest value of the dtype (ties to even), as the dtype's own
// conversion does; NaN and infinities pass through, overflow goes to infinity.
double round_to(DType t, double x);

// Encodes / decodes one element as the ABI stores it (native float/double, or
// the 16-bit word of f16/bf16). `dst`/`src` point to dtype_bytes(t) bytes.
void encode_element(DType t, double x, void* dst);
double decode_element(DType t, const void* src);

}  // namespace attncheck
