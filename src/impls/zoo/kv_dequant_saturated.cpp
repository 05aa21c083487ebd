// Zoo (ABI v3 KV_FORMATS): every dequantized K and V element (code times its scale, or times
// its block's d) saturates at +-448, e4m3's largest finite value: a kernel that feeds its fp8
// tensor-core path by converting code * scale back to e4m3 with satfinite (CUDA's
// cvt.rn.satfinite), so a scale that makes a value larger than 448 clamps it (the rounding
// to e4m3's 3 mantissa bits left out: only the saturation is emulated). The generator's
// scales bring the largest code near 1, so the fault is invisible to quantized_matches_oracle
// on drawn cases; scale_power_of_two multiplies V's scales by up to 2^12, and the larger call
// then comes back with out far below 2^e times the case's. Emulated by decoding K and V as
// reference does (impls/kv_format_gather.h: each live element rounded once to the dtype),
// clamping, and running reference's forward on the decoded copies.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "impls/kernels.h"
#include "impls/kv_format_gather.h"
#include "impls/zoo/kv_format_members.h"

namespace attncheck {

int kv_dequant_saturated_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || !detail::kv_formats_in_use(*call) || !detail::kv_format_defect(*call).empty())
    return reference_forward_v3(call, err, err_len);
  detail::KvDecodedCopies copies;
  attncheck_call_v3 c;
  try {
    c = detail::decode_kv_formats(*call, copies);
  } catch (const std::exception&) {
    return reference_forward_v3(call, err, err_len);  // reference names the defect
  }
  const DType dt = static_cast<DType>(static_cast<int>(call->v2.dtype));
  const std::size_t e = dtype_bytes(dt);
  for (std::vector<uint8_t>* side : {&copies.k, &copies.v})
    for (std::size_t at = 0; at + e <= side->size(); at += e) {
      const double x = decode_element(dt, side->data() + at);
      if (std::abs(x) > 448.0) encode_element(dt, std::clamp(x, -448.0, 448.0), side->data() + at);
    }
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
