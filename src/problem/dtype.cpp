#include "problem/dtype.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "problem/dtype_codec.h"

namespace attncheck {

namespace {

using codec::decode_half;
using codec::decode_native;
using codec::encode_half;
using codec::encode_native;
using codec::one_decoded;
using codec::one_encoded;

// Indexed by the ABI's enum value (checked by the static_asserts below).
constexpr DTypeInfo kTable[] = {
    {DType::f32, "f32", 4, 0x1p-24, DType::f32, std::numeric_limits<float>::max(),
     std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
     0x7FA5DEADull,  // exponent all ones, quiet bit clear: signalling
     one_encoded<encode_native<float>>, one_decoded<decode_native<float>>, encode_native<float>, decode_native<float>},
    {DType::f64, "f64", 8, 0x1p-53, DType::f64, std::numeric_limits<double>::max(),
     std::numeric_limits<double>::min(), std::numeric_limits<double>::denorm_min(), 0x7FF5DEADBEEFDEADull,
     one_encoded<encode_native<double>>, one_decoded<decode_native<double>>, encode_native<double>,
     decode_native<double>},
    {DType::f16, "f16", 2, 0x1p-11, DType::f32, 65504.0, 0x1p-14, 0x1p-24, 0x7D5Bull,
     one_encoded<encode_half<Eigen::half>>, one_decoded<decode_half<Eigen::half>>, encode_half<Eigen::half>,
     decode_half<Eigen::half>},
    {DType::bf16, "bf16", 2, 0x1p-8, DType::f32, 0x1.FEp127 /* (2 - 2^-7) * 2^127 */, 0x1p-126, 0x1p-133,
     0x7FA5ull, one_encoded<encode_half<Eigen::bfloat16>>, one_decoded<decode_half<Eigen::bfloat16>>,
     encode_half<Eigen::bfloat16>, decode_half<Eigen::bfloat16>},
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

void round_n(DType t, double* x, int64_t n) {
  const DTypeInfo& d = info(t);
  constexpr int64_t kChunk = 256;
  alignas(64) uint8_t bytes[kChunk * sizeof(double)];  // room for the widest element
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    d.encode_n(x + i, m, bytes);
    d.decode_n(bytes, m, x + i);
  }
}

}  // namespace attncheck
