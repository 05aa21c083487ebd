// The zoo members of ABI version 3's stored K and V formats: reference's correct v3 forward
// with one realistic fault of a quantized-cache kernel each, correct on calls whose K and V
// are stored in the dtype (their v1 and v2 entries are reference's). Their rows: builtins.cpp.
#pragma once

#include <cstddef>

#include "attncheck/plugin_v3.h"

namespace attncheck {

// kv_scale_ignored: the scales of FP8, INT8 and INT4 K and V are never applied (every
// scale read as 1): flashinfer#4979, a ragged prefill that ignored k_scale/v_scale.
int kv_scale_ignored_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);

// q4_0_nibbles_interleaved: Q4_0 blocks read as INT4's pairs (channel 2i low, 2i + 1 high
// nibble of qs[i]) instead of ggml's halves (j low, 16 + j high).
int q4_0_nibbles_interleaved_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);

// int4_nibbles_as_halves: INT4 rows read as Q4_0's halves by 32 channels (j low, 16 + j high
// nibble of byte j) instead of the ABI's pairs (2i low, 2i + 1 high nibble of byte i).
int int4_nibbles_as_halves_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);

// kv_dequant_saturated: every dequantized K and V element (code times scale or d) clamped to
// +-448, as an fp8 operand path's satfinite conversion does after applying the scale.
int kv_dequant_saturated_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);

// kv_dead_block_nan: the last block of 16 keys of a sequence computed whole, the keys past Lk
// with weight 0: a dead V code that decodes to NaN gives 0 x NaN = NaN (vllm#53628).
int kv_dead_block_nan_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);

}  // namespace attncheck
