// How version 3 stores K and V (docs/abi/plugin-abi-v3.md, "Stored formats of K and V";
// docs/kv-formats.md): one row per format, and every other place asks the row, as the
// dtypes do (dtype.h). What a code means is kv_codes.h; a row's real values kv_decode.h;
// real values to codes kv_encode.h; the scales' broadcasting kv_scale.h.
//
// A view of K or V in a format other than DTYPE counts its strides in units: one uint16_t
// (F16, BF16), one byte (FP8, INT8; INT4 holds two channels in it), one 34- or 18-byte block
// of 32 channels (Q8_0, Q4_0). The units of a row are consecutive (stride[3] is 1), so a row
// of head_dim channels is head_dim / unit_channels units.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "problem/dtype.h"

namespace attncheck {

// The values are the ABI's attncheck_kv_format (include/attncheck/plugin_v3.h: ATTNCHECK_KV_DTYPE
// = 0 ... ATTNCHECK_KV_Q4_0 = 8). This file does not include that header (it was written before
// the header landed); the slice that first includes both static_asserts each value against it.
enum class KvFormat : int {
  dtype = 0,     // the call's dtype (neutral)
  f16 = 1,       // binary16, unscaled; dtype F32 only
  bf16 = 2,      // bfloat16, unscaled; dtype F32 only
  fp8_e4m3 = 3,  // OCP e4m3fn, times a scale
  fp8_e5m2 = 4,  // OCP e5m2, times a scale
  int8 = 5,      // int8, times a scale
  int4 = 6,      // two per byte, even channel low, nibble - 8, times a scale
  q8_0 = 7,      // ggml block_q8_0 {uint16 d; int8 qs[32]}
  q4_0 = 8,      // ggml block_q4_0 {uint16 d; uint8 qs[16]}, halves
};

struct KvFormatInfo {
  KvFormat format;
  std::string_view name;  // "fp8_e4m3": as the spec's table, lower case (reports, case files)
  int64_t unit_bytes;     // bytes of one unit, the step of the strides (0 for dtype: the dtype's element)
  int64_t unit_channels;  // channels one unit holds: 1, 2 (int4), 32 (q8_0, q4_0)
  int code_bits;          // bits of one channel's code (kv_codes.h): 16, 8 or 4 (int4, q4_0's nibbles)
  bool scaled;            // real = value * the attncheck_scale of (batch, kv head, channel)
  bool block_scaled;      // real = value * d, the binary16 at bytes 0-1 of the channel's block
  // The working type ATTNCHECK_NUMERICS_KV_PRECISION lets a kernel round to: binary16 for F16,
  // Q8_0 and Q4_0 (their d is a binary16), bfloat16 for BF16; none ("dtype") for the rest.
  std::optional<DType> working;
};

// The rows, indexed by the ABI value (kv_format.cpp checks the order). In the header so that
// info(f) is inline in the decoder's loops.
inline constexpr KvFormatInfo kKvFormatTable[] = {
    {KvFormat::dtype, "dtype", 0, 1, 0, false, false, std::nullopt},
    {KvFormat::f16, "f16", 2, 1, 16, false, false, DType::f16},
    {KvFormat::bf16, "bf16", 2, 1, 16, false, false, DType::bf16},
    {KvFormat::fp8_e4m3, "fp8_e4m3", 1, 1, 8, true, false, std::nullopt},
    {KvFormat::fp8_e5m2, "fp8_e5m2", 1, 1, 8, true, false, std::nullopt},
    {KvFormat::int8, "int8", 1, 1, 8, true, false, std::nullopt},
    {KvFormat::int4, "int4", 1, 2, 4, true, false, std::nullopt},
    {KvFormat::q8_0, "q8_0", 34, 32, 8, false, true, DType::f16},
    {KvFormat::q4_0, "q4_0", 18, 32, 4, false, true, DType::f16},
};

// Every format, in ABI order.
inline std::span<const KvFormatInfo> all_kv_formats() { return kKvFormatTable; }
constexpr const KvFormatInfo& info(KvFormat f) { return kKvFormatTable[static_cast<std::size_t>(f)]; }
// The row of an ABI value as a C caller stored it; nullptr when no format has it.
const KvFormatInfo* find_kv_format(int abi_value);
std::optional<KvFormat> kv_format_from_name(std::string_view name);
inline std::string_view kv_format_name(KvFormat f) { return info(f).name; }

// Whether the spec lets K or V be stored in f in a call of this dtype: DTYPE with any;
// F16 and BF16 with F32 only; the scaled and block formats with F32, F16 or BF16 (never F64).
bool kv_format_allows(KvFormat f, DType dtype);
// Bytes of one unit in a call of this dtype (the dtype's element for DTYPE).
int64_t kv_unit_bytes(KvFormat f, DType dtype);
// Whether a row of `channels` channels is a whole number of units (even for INT4, a multiple
// of 32 for the blocks), and how many units it is then.
bool kv_channels_fit(KvFormat f, int64_t channels);
int64_t kv_row_units(KvFormat f, int64_t channels);

}  // namespace attncheck
