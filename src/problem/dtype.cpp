#include "problem/dtype.h"

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <limits>

namespace attncheck {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    default: return 2;
  }
}

double unit_roundoff(DType t) {
  switch (t) {
    case DType::f32: return std::ldexp(1.0, -24);
    case DType::f64: return std::ldexp(1.0, -53);
    case DType::f16: return std::ldexp(1.0, -11);
    case DType::bf16: return std::ldexp(1.0, -8);
  }
  return 0;
}

double max_finite(DType t) {
  switch (t) {
    case DType::f32: return std::numeric_limits<float>::max();
    case DType::f64: return std::numeric_limits<double>::max();
    case DType::f16: return 65504.0;
    case DType::bf16: return std::ldexp(255.0, 120);  // (2 - 2^-7) * 2^127
  }
  return 0;
}

double min_normal(DType t) {
  switch (t) {
    case DType::f32: return std::numeric_limits<float>::min();
    case DType::f64: return std::numeric_limits<double>::min();
    case DType::f16: return std::ldexp(1.0, -14);
    case DType::bf16: return std::ldexp(1.0, -126);
  }
  return 0;
}

double min_subnormal(DType t) {
  switch (t) {
    case DType::f32: return std::numeric_limits<float>::denorm_min();
    case DType::f64: return std::numeric_limits<double>::denorm_min();
    case DType::f16: return std::ldexp(1.0, -24);
    case DType::bf16: return std::ldexp(1.0, -133);
  }
  return 0;
}

namespace {
// f16/bf16 go through float. Rounding double -> float -> half can round twice;
// for values already in float (everything the generators make) it is exact.
uint16_t to_half_bits(double x) {
  return Eigen::numext::bit_cast<uint16_t>(Eigen::half(static_cast<float>(x)));
}
uint16_t to_bf16_bits(double x) {
  return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(static_cast<float>(x)));
}
double from_half_bits(uint16_t b) {
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(b));
}
double from_bf16_bits(uint16_t b) {
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(b));
}
}  // namespace

double round_to(DType t, double x) {
  switch (t) {
    case DType::f32: return static_cast<float>(x);
    case DType::f64: return x;
    case DType::f16: return from_half_bits(to_half_bits(x));
    case DType::bf16: return from_bf16_bits(to_bf16_bits(x));
  }
  return x;
}

void encode_element(DType t, double x, void* dst) {
  switch (t) {
    case DType::f32: { float f = static_cast<float>(x); std::memcpy(dst, &f, 4); return; }
    case DType::f64: std::memcpy(dst, &x, 8); return;
    case DType::f16: { uint16_t b = to_half_bits(x); std::memcpy(dst, &b, 2); return; }
    case DType::bf16: { uint16_t b = to_bf16_bits(x); std::memcpy(dst, &b, 2); return; }
  }
}

double decode_element(DType t, const void* src) {
  switch (t) {
    case DType::f32: { float f; std::memcpy(&f, src, 4); return f; }
    case DType::f64: { double d; std::memcpy(&d, src, 8); return d; }
    case DType::f16: { uint16_t b; std::memcpy(&b, src, 2); return from_half_bits(b); }
    case DType::bf16: { uint16_t b; std::memcpy(&b, src, 2); return from_bf16_bits(b); }
  }
  return 0;
}

}  // namespace attncheck
