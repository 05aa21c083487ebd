#include "problem/dtype.h"

#include "problem/dtype_codec.h"

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <limits>

namespace attncheck {

namespace {

template <class T> void encode_native(double x, void* dst) {
  const T v = static_cast<T>(x);
  std::memcpy(dst, &v, sizeof v);
}
template <class T> double decode_native(const void* src) {
  T v;
  std::memcpy(&v, src, sizeof v);
  return static_cast<double>(v);
}

// f16/bf16 go through float. Rounding double -> float -> half can round twice;
// for values already in float (everything the generators make) it is exact.
template <class Half> void encode_half(double x, void* dst) {
  const uint16_t b = Eigen::numext::bit_cast<uint16_t>(Half(static_cast<float>(x)));
  std::memcpy(dst, &b, 2);
}
template <class Half> double decode_half(const void* src) {
  uint16_t b;
  std::memcpy(&b, src, 2);
  return static_cast<float>(Eigen::numext::bit_cast<Half>(b));
}

// Indexed by the ABI's enum value (checked by the static_asserts below).
constexpr DTypeInfo kTable[] = {
    {DType::f32, "f32", 4, 0x1p-24, DType::f32, std::numeric_limits<float>::max(),
     std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
     0x7FA5DEADull,  // exponent all ones, quiet bit clear: signalling
     encode_native<float>, decode_native<float>, codec::encode_native<float>, codec::decode_native<float>},
    {DType::f64, "f64", 8, 0x1p-53, DType::f64, std::numeric_limits<double>::max(),
     std::numeric_limits<double>::min(), std::numeric_limits<double>::denorm_min(), 0x7FF5DEADBEEFDEADull,
     encode_native<double>, decode_native<double>, codec::encode_native<double>, codec::decode_native<double>},
    {DType::f16, "f16", 2, 0x1p-11, DType::f32, 65504.0, 0x1p-14, 0x1p-24, 0x7D5Bull, encode_half<Eigen::half>,
     decode_half<Eigen::half>, codec::encode_half<Eigen::half>, codec::decode_half<Eigen::half>},
    {DType::bf16, "bf16", 2, 0x1p-8, DType::f32, 0x1.FEp127 /* (2 - 2^-7) * 2^127 */, 0x1p-126, 0x1p-133,
     0x7FA5ull, encode_half<Eigen::bfloat16>, decode_half<Eigen::bfloat16>,
     codec::encode_half<Eigen::bfloat16>, codec::decode_half<Eigen::bfloat16>},
};
static_assert(static_cast<int>(DType::f32) == 0 && static_cast<int>(DType::f64) == 1 &&
              static_cast<int>(DType::f16) == 2 && static_cast<int>(DType::bf16) == 3);

}  // namespace

std::span<const DTypeInfo> all_dtypes() { return kTable; }

std::vector<DType> every_dtype() {
  std::vector<DType> v;
  for (const DTypeInfo& d : kTable) v.push_back(d.type);
  return v;
}

const DTypeInfo& info(DType t) { return kTable[static_cast<std::size_t>(t)]; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& d : kTable)
    if (d.name == name) return d.type;
  return std::nullopt;
}

const DTypeInfo* find_dtype(int abi_value) {
  for (const DTypeInfo& d : kTable)
    if (static_cast<int>(d.type) == abi_value) return &d;
  return nullptr;
}

std::string dtype_names(std::string_view separator) {
  std::string s;
  for (const DTypeInfo& d : kTable) {
    if (!s.empty()) s += separator;
    s += d.name;
  }
  return s;
}

double round_to(DType t, double x) {
  const DTypeInfo& d = info(t);
  unsigned char bytes[8];
  d.encode(x, bytes);
  return d.decode(bytes);
}

}  // namespace attncheck
