// The zoo members of ABI version 3's paged keys (block_table): reference's
// correct paged forward (impls/paged_gather.h) with one realistic fault of a
// paged kernel each, correct on unpaged calls (their v1 and v2 entries are
// reference's). Their rows: builtins.cpp.
#pragma once

#include <cstddef>

#include "attncheck/plugin_v3.h"

namespace attncheck {

// paged_short_sequence_zeros: a sequence with fewer keys than one page
// (0 < Lk < page_size) gets out = 0 and lse = -inf (flashinfer#725).
int paged_short_sequence_zeros_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);
// paged_last_page_unmasked: the last page of a sequence is read whole: its
// keys are the table's pages times page_size (at most kv_len), slots >= Lk
// of the last page attended.
int paged_last_page_unmasked_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);
// paged_extra_page_on_boundary: when Lk is a multiple of page_size, the page
// of the first unread table entry read as one more full page of keys.
int paged_extra_page_on_boundary_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);
// paged_path_by_page_number: naive's summation order when the first table
// entry names an odd page, reference's otherwise: where the pages lie picks
// the rounding (pytorch/pytorch#182593's class).
int paged_path_by_page_number_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);
// paged_slot_stride_from_head: the pool's slot and kv-head strides swapped
// (NHD read as HND, or the other way).
int paged_slot_stride_from_head_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);
// paged_alias_length_overwritten: a page's valid slots kept once per page,
// written by every sequence that reads it (the last write wins); a reader of
// an aliased page reads zeros past that count (per-page metadata kept under
// the assumption that pages are distinct).
int paged_alias_length_overwritten_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len);

}  // namespace attncheck
