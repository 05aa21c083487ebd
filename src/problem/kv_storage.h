// A Problem's stored K and V (ABI v3, docs/abi/plugin-abi-v3.md "Stored formats of K and V";
// docs/kv-formats.md): the Problem holds the real values of k and v and the scales (problem.h);
// this file derives the codes the call sends, checks that the real values are exactly what
// those codes mean, and gives the bound its one rounding of each real element.
//
// The stored tensor of K is dense [batch][kv_heads][kv_len][units], units = head_dim /
// unit_channels of k_format (kv_format.h) of unit_bytes each; V likewise over value_dim. Keys
// j < Lk hold the codes of the real values; keys past Lk exist nowhere in the call (dead
// bytes) and hold what the problem's values there say, as padding does in version 2: the codes
// of a dead row whose values are exactly codes of the format (with its scales, or its blocks'
// d from the scales), else poison: NaN codes (fp8's 0x7F, e5m2 0x7F, f16/bf16 NaN) and NaN d
// in blocks; INT8 and INT4 have no NaN code, so such dead rows hold the extreme code (-128,
// nibble 0). The generator leaves poison there; dead_codes_inert writes codes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "problem/kv_decode.h"
#include "problem/kv_format.h"

namespace attncheck {

struct Problem;

// Elements of k_scales (is_k) or v_scales as problem.h defines them for the problem's format
// and granularity: 0 for DTYPE, F16 and BF16.
int64_t kv_scales_size(const Problem& p, bool is_k);

// Bytes of the stored K (is_k) or V tensor, dense [batch][kv_heads][kv_len][units].
int64_t kv_stored_bytes(const Problem& p, bool is_k);
// Its strides in units, [batch][kv head][key][unit].
void kv_stored_strides(const Problem& p, bool is_k, int64_t* stride);

// The scales of a scaled format as the call's float32 array, with the ABI's strides
// (kv_scale.h scale_strides). Empty for the other formats.
std::vector<float> kv_scale_array(const Problem& p, bool is_k);
KvScale kv_scale_view(const Problem& p, bool is_k, const float* data);

// V as a view of K (ABI v3's V_VIEW_OF_K, problem.h) with K in a format: the v_scales that
// V's view of k_scales reads (V shares K's format and scale): per (kv head, channel) the first
// value_dim channels of each kv head's, for a block format the first value_dim / 32 block d's
// of each key's row, otherwise k_scales itself. k_format, k_scale_granularity and k_scales
// must be consistent.
std::vector<double> kv_view_v_scales(const Problem& p);

// Writes the stored tensor (kv_stored_bytes at dst): codes for live keys, dead keys as above.
// The problem must be consistent (kv_storage_inconsistency empty).
void encode_kv_stored(const Problem& p, bool is_k, uint8_t* dst);

// "" when the stored formats are usable: each format allowed with the dtype, the channels a
// whole number of units, the scales sized and finite > 0 (float32 values; binary16 d, finite),
// k and v padded, dense and forward, and every live real value exactly code times scale.
std::string kv_storage_inconsistency(const Problem& p);

// The unit roundoff of one rounding of a real K (V) element to the dtype: a kernel may form
// code * scale in its working type (the dtype). 0 when every real value of the format is
// exact in the dtype (DTYPE; F16, BF16 with dtype F32; Q8_0, Q4_0 with dtype F32).
double kv_element_rounding(const Problem& p, bool is_k);

}  // namespace attncheck
