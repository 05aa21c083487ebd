// The zoo members of ABI version 3's packed batches (cu_seqlens_q/k):
// reference's correct packed forward with one realistic fault of a varlen
// kernel, correct on padded calls (their v1 and v2 entries are reference's).
// Their rows: builtins.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attncheck/plugin_v3.h"

namespace attncheck {

// packed_kv_lens_ignored: with packed keys, each sequence attends its whole
// key slot, kv_lens (seqused_k) ignored.
int packed_kv_lens_ignored_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);
// packed_empty_split_nan: packed keys split in partitions of 64 counted from
// kv_len (max_seqlen_k); a partition past a sequence's keys makes its out NaN.
int packed_empty_split_nan_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);
// packed_outputs_sorted: sequences scheduled longest query slot first, each
// one's out rows written at its sorted place's packed offset.
int packed_outputs_sorted_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);
// packed_keyless_rows_nan: in a packed call, a sequence with rows but no keys
// gets out = 0/0 = NaN (no guard for an empty key range).
int packed_keyless_rows_nan_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);

// Sequence b's live out rows (its first Lq rows, every head and channel) set to
// NaN in the call's dtype: the 0/0 both NaN members write (packed_nan_rows.cpp).
void write_sequence_out_nan(const attncheck_call_v3& call, int64_t b);

}  // namespace attncheck
