#include "impls/builtins.h"

#include "impls/kernels.h"
#include "impls/zoo/alibi_batch_members.h"
#include "impls/zoo/broadcast_kv_members.h"
#include "impls/zoo/kv_format_members.h"
#include "impls/zoo/packed_members.h"
#include "impls/zoo/paged_members.h"
#include "impls/zoo/promise_members.h"
#include "impls/zoo/v_view_members.h"
#include "problem/problem.h"

namespace attncheck {

namespace {

// A zoo member of ABI v1 (forward only, masks and causal rules).
BuiltinInfo v1_member(BuiltinInfo row) {
  row.kind = BuiltinKind::zoo;
  return row;
}

// A zoo member of ABI v2: declares every feature and gets one of them wrong.
BuiltinInfo v2_member(BuiltinInfo row) {
  row.kind = BuiltinKind::zoo;
  row.features = kAllFeatures;
  return row;
}

// A zoo member of the backward: reference's forward (correct) with one backward fault.
BuiltinInfo backward_member(BuiltinInfo row) {
  row.kind = BuiltinKind::zoo;
  row.forward = reference_forward;
  row.forward_v2 = reference_forward_v2;
  row.features = kAllFeatures;
  return row;
}

// What the references promise (ABI version 3, judged bit for bit by the
// promise laws and batch_composition_independence): each computes every
// (batch entry, head) on its own, from that sequence's own lengths, in an
// order fixed by that sequence alone (naive: one row at a time; online: key
// tiles of a fixed size from key 0, threads over independent (batch, head,
// query block) items; reference: Eigen products sized by the sequence's Lq
// and Lk), never by the batch, the bounds, the addresses or the padding; their
// backwards sum dk and dv in a fixed order.
// Every stored K and V format (ABI v3): the references decode each exactly
// (impls/kv_format_gather.h) and compute over the real values rounded once.
constexpr uint32_t kEveryKvFormat = (1u << 9) - 2;

constexpr uint32_t kReferencePromises =
    ATTNCHECK_PROMISE_DETERMINISTIC | ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD | ATTNCHECK_PROMISE_BATCH_INVARIANT;

// A zoo member of ABI v3's packing: reference's entries (correct) but its v3
// forward, with every v2 feature and PACKED.
BuiltinInfo packed_member(BuiltinInfo row) {
  row.kind = BuiltinKind::zoo;
  row.forward = reference_forward;
  row.forward_v2 = reference_forward_v2;
  row.features = kAllFeatures | kPackedFeature;
  return row;
}

// A zoo member of ABI v3's stored K and V formats: reference's entries
// (correct) but its v3 forward, with every v2 feature, PACKED and every format.
BuiltinInfo kv_format_member(BuiltinInfo row) {
  row = packed_member(row);
  row.features = kAllFeatures | kPackedFeature | kKvFormatsFeature;
  row.kv_formats = (1u << 9) - 2;  // every format but DTYPE's bit (implied)
  return row;
}

// A zoo member of ABI v3's paged keys: reference's entries (correct) but its
// v3 forward, with every v2 feature, PACKED and PAGED.
BuiltinInfo paged_member(BuiltinInfo row) {
  row = packed_member(row);
  row.features = kAllFeatures | kPackedFeature | kPagedFeature;
  return row;
}

// A zoo member of ABI v3's V as a view of K (MLA): reference's entries
// (correct) but its v3 forward, with every v2 feature, PACKED and V_VIEW_OF_K
// (not PAGED: the embedded default runs only the paged laws on a paged member).
BuiltinInfo v_view_member(BuiltinInfo row) {
  row = packed_member(row);
  row.features = kAllFeatures | kPackedFeature | kVViewFeature;
  return row;
}

// A zoo member of ABI v3's ALiBi slopes per (batch, head): reference's entries
// (correct) but its v3 forward, with every v2 feature and ALIBI_BATCH.
BuiltinInfo alibi_batch_member(BuiltinInfo row) {
  row = packed_member(row);
  row.features = kAllFeatures | kAlibiBatchFeature;
  return row;
}

// A zoo member of ABI v3's broadcast K and V: reference's entries (correct) but
// its v3 forward, with every v2 feature and BROADCAST_KV.
BuiltinInfo broadcast_kv_member(BuiltinInfo row) {
  row = packed_member(row);
  row.features = kAllFeatures | kBroadcastKvFeature;
  return row;
}

}  // namespace

const std::vector<BuiltinInfo>& builtins() {
  static const std::vector<BuiltinInfo> all = {
      // The references: correct, written independently, with every feature and a backward.
      {.name = "reference",
       .kind = BuiltinKind::reference,
       .description = "whole-matrix attention with Eigen: S = scale Q K^T, stable softmax, P V",
       .forward = reference_forward,
       .forward_v2 = reference_forward_v2,
       .features = kAllFeatures | kPackedFeature | kPagedFeature | kKvFormatsFeature | kAlibiBatchFeature |
                   kVViewFeature | kBroadcastKvFeature,
       .backward_v2 = reference_backward_v2,
       .forward_v3 = reference_forward_v3,
       .promises = kReferencePromises,
       .kv_formats = kEveryKvFormat},
      {.name = "naive",
       .kind = BuiltinKind::reference,
       .description = "the founding C# loops made correct: one query row at a time, scaled, max-subtracted",
       .forward = naive_forward,
       .forward_v2 = naive_forward_v2,
       .features = kAllFeatures | kPackedFeature | kPagedFeature | kKvFormatsFeature | kAlibiBatchFeature |
                   kVViewFeature | kBroadcastKvFeature,
       .backward_v2 = naive_backward_v2,
       .forward_v3 = naive_forward_v3,
       .promises = kReferencePromises,
       .kv_formats = kEveryKvFormat},
      {.name = "online",
       .kind = BuiltinKind::reference,
       .description = "tiled streaming softmax (FlashAttention order): running max, sum and rescaled output",
       .forward = online_forward,
       .forward_v2 = online_forward_v2,
       .features = kAllFeatures | kPackedFeature | kPagedFeature | kKvFormatsFeature | kAlibiBatchFeature |
                   kVViewFeature | kBroadcastKvFeature,
       .backward_v2 = online_backward_v2,
       .forward_v3 = online_forward_v3,
       .promises = kReferencePromises,
       .kv_formats = kEveryKvFormat},

      // The zoo of ABI v1 faults. The founding faults are caught by the laws
      // named in the founding case.
      v1_member({.name = "seed_unscaled",
                 .description = "the founding layer: logits never divided by sqrt(head_dim)",
                 .forward = seed_unscaled_forward,
                 .pinned_laws = {"query_sensitivity", "matches_oracle", "scale_invariance"},
                 .diagnosis = "attention without the 1/sqrt(d) scale"}),
      v1_member({.name = "seed_softmax_bypass",
                 .description = "the founding \"fix\": softmax dropped, out = sum over visible keys of V * Q",
                 .forward = seed_softmax_bypass_forward,
                 .pinned_laws = {"weights_sum_to_one", "output_in_value_hull", "matches_oracle", "weights_in_unit_interval",
                                 "logit_shift_invariance", "value_linearity"},
                 .diagnosis = "softmax weights dropped"}),
      v1_member({.name = "no_max_subtraction",
                 .description = "softmax without subtracting the row max: exp overflows to inf/NaN for large logits",
                 .forward = no_max_subtraction_forward,
                 .pinned_laws = {"finite_for_finite_inputs", "matches_oracle"},
                 .diagnosis = "softmax without subtracting the row max"}),
      v1_member({.name = "scale_inverse_d",
                 .description = "default scale 1/head_dim instead of 1/sqrt(head_dim)",
                 .forward = scale_inverse_d_forward,
                 .pinned_laws = {"default_scale_is_inverse_sqrt_d", "matches_oracle"},
                 .diagnosis = "the default scale 1/head_dim instead of 1/sqrt(head_dim)"}),
      v1_member({.name = "causal_off_by_one",
                 .description = "causal boundary one key late: each query also sees the next key",
                 .forward = causal_off_by_one_forward,
                 .pinned_laws = {"causal_prefix_consistency", "causal_equals_explicit_mask", "masked_weights_zero",
                                 "masked_keys_ignored", "fully_masked_rows_zero"},
                 .diagnosis = "the causal rule off by one"}),
      v1_member({.name = "last_key_dropped",
                 .description = "key loop stops one short: the last key is never attended",
                 .forward = last_key_dropped_forward,
                 .pinned_laws = {"weights_sum_to_one", "single_key_passthrough", "matches_oracle", "key_permutation_invariance"},
                 .diagnosis = "the last key dropped"}),
      v1_member({.name = "kv_swapped",
                 .description = "K and V exchanged: logits from q . v, output mixes K rows",
                 .forward = kv_swapped_forward,
                 .pinned_laws = {"matches_oracle", "weights_sum_to_one", "weights_in_unit_interval", "value_scaling",
                                 "value_linearity", "uniform_on_zero_query"},
                 .diagnosis = "K and V swapped"}),
      v1_member({.name = "batch_head_swapped",
                 .description = "stride mix-up: the block of (batch b, head h) is written at (batch h, head b)",
                 .forward = batch_head_swapped_forward,
                 .pinned_laws = {"batch_head_independence", "matches_oracle"},
                 .diagnosis = "output written with the batch and head strides exchanged"}),
      // Right on every drawn case (at most 3 sequences): only a law that builds
      // a larger batch sees it. No diagnosis words: the diagnosis reads the
      // drawn case, on which it is the reference itself.
      v1_member({.name = "batch_group_kv_stale",
                 .description = "batch computed in groups of 4 sequences whose k and v pointers are never advanced: "
                                "sequence 4 + n attends with sequence n's keys and values",
                 .forward = batch_group_kv_stale_forward,
                 .pinned_laws = {"batch_composition_independence"}}),
      // As accurate as the references: no model names it, deterministic tells it apart.
      v1_member({.name = "nondeterministic_order",
                 .description = "keys summed in an order that changes between calls: last bits differ",
                 .forward = nondeterministic_order_forward,
                 .reset = nondeterministic_order_reset,
                 .pinned_laws = {"deterministic"}}),
      v1_member({.name = "query_tile_shared_rowsum",
                 .description = "row max and sum of a 4-row query tile taken over the whole tile, not per row",
                 .forward = query_tile_shared_rowsum_forward,
                 .pinned_laws = {"query_permutation_equivariance", "weights_sum_to_one", "matches_oracle"},
                 .diagnosis = "extra mass in the denominator"}),
      // Correct for finite inputs: only the opt-in nan_propagates tells it
      // apart, and the embedded default runs that law for it alone.
      v1_member({.name = "nan_key_dropped",
                 .description = "a key weighs exp(s - max) only if its score > -inf: a NaN in k drops its key as if masked",
                 .forward = nan_key_dropped_forward,
                 .pinned_laws = {"nan_propagates"}}),
      // Past 2,048 keys only: caught by the default profile's long rows.
      v1_member({.name = "split_kv_merge_unscaled",
                 .description = "split-KV past 2,048 keys: partitions of 1,024 merged without rescaling by their maxima",
                 .forward = split_kv_merge_unscaled_forward,
                 .pinned_laws = {"matches_oracle"},
                 .diagnosis = "split-KV partitions merged without rescaling",
                 .profile = "default"}),

      // The zoo of ABI v2 faults: each by the law written for its feature, and by the oracle.
      v2_member({.name = "gqa_kv_modulo",
                 .description = "GQA indexed modulo: query head h reads kv head h % kv_heads, not h / (heads / kv_heads)",
                 .forward = gqa_kv_modulo_forward,
                 .forward_v2 = gqa_kv_modulo_forward_v2,
                 .pinned_laws = {"gqa_equals_repeated_kv", "matches_oracle"},
                 .diagnosis = "kv head h % kv_heads"}),
      v2_member({.name = "strides_ignored",
                 .description = "declares STRIDES but reads q, k, v as dense BHSD whatever their strides",
                 .forward = strides_ignored_forward,
                 .forward_v2 = strides_ignored_forward_v2,
                 .pinned_laws = {"layout_invariance", "matches_oracle", "softcap_bounds_weights"},
                 .diagnosis = "strides ignored"}),
      v2_member({.name = "padding_keys_attended",
                 .description = "kv_lens ignored in the key loop: padding keys j >= kv_lens[b] are attended",
                 .forward = padding_keys_attended_forward,
                 .forward_v2 = padding_keys_attended_forward_v2,
                 .pinned_laws = {"lengths_equal_slices", "matches_oracle"},
                 .diagnosis = "padding keys attended"}),
      v2_member({.name = "window_off_by_one",
                 .description = "window_left = W admits W keys on the left instead of W + 1",
                 .forward = window_off_by_one_forward,
                 .forward_v2 = window_off_by_one_forward_v2,
                 .pinned_laws = {"window_equals_mask", "matches_oracle"},
                 .diagnosis = "the window one key narrower on the left"}),
      v2_member({.name = "window_top_left",
                 .description = "window and ALiBi aligned to d_i = i even under bottom-right and no causal rule",
                 .forward = window_top_left_forward,
                 .forward_v2 = window_top_left_forward_v2,
                 .pinned_laws = {"window_equals_mask", "matches_oracle"},
                 .diagnosis = "the window (and ALiBi) aligned top-left"}),
      v2_member({.name = "softcap_after_bias",
                 .description = "soft-cap applied after adding the bias and ALiBi instead of to the score alone",
                 .forward = softcap_after_bias_forward,
                 .forward_v2 = softcap_after_bias_forward_v2,
                 .pinned_laws = {"matches_oracle", "bias_row_shift_invariance"},
                 .diagnosis = "the soft-cap applied after the bias"}),
      v2_member({.name = "alibi_sign_flipped",
                 .description = "ALiBi with the wrong sign: + slope * |d_i - j|",
                 .forward = alibi_sign_flipped_forward,
                 .forward_v2 = alibi_sign_flipped_forward_v2,
                 .pinned_laws = {"alibi_equals_bias", "matches_oracle"},
                 .diagnosis = "ALiBi's sign flipped"}),
      v2_member({.name = "sinks_ignored",
                 .description = "declares SINKS but leaves exp(sink) out of the softmax denominator",
                 .forward = sinks_ignored_forward,
                 .forward_v2 = sinks_ignored_forward_v2,
                 .pinned_laws = {"sink_equals_extra_key", "matches_oracle"},
                 .diagnosis = "the sinks ignored"}),
      v2_member({.name = "lse_base2",
                 .description = "lse written as log2 of the softmax denominator instead of the natural log",
                 .forward = lse_base2_forward,
                 .forward_v2 = lse_base2_forward_v2,
                 .pinned_laws = {"lse_matches_oracle"},
                 .diagnosis = "lse in base 2"}),
      // Right on every drawn case whose mask leaves the first key tile of each
      // query block's range to some row: only the split's masks hide it.
      v2_member({.name = "skipped_tile_lse",
                 .description = "block-sparse tiles: a query block's lse starts at the first tile of its range, "
                                "so when no row sees that tile (skipped) the lse counts an extra exp(0)",
                 .forward = skipped_tile_lse_forward,
                 .forward_v2 = skipped_tile_lse_forward_v2,
                 .pinned_laws = {"split_consistency"}}),

      // ABI version 3's promises (issue #32): each member makes one and breaks
      // it in the last bits only, every result within the bound. No fault
      // model of a wrong value names them; diagnosis/promise_diagnosis.h names
      // bits that follow the buffers (path_by_alignment), and nothing names
      // bits that follow the batch yet (split_by_batch: no words).
      v2_member({.name = "split_by_batch",
                 .description = "promises batch invariance, but sums the keys in another order (key tiles, a running "
                                "max) for batches of 3 or more: a split count chosen by the batch size",
                 .forward = split_by_batch_forward,
                 .forward_v2 = split_by_batch_forward_v2,
                 .promises = ATTNCHECK_PROMISE_BATCH_INVARIANT,
                 .pinned_laws = {"batch_invariance"}}),
      v2_member({.name = "path_by_alignment",
                 .description = "promises determinism, but takes a vectorised path (another order of the key sums) "
                                "when out is aligned to 128 bytes: last bits follow the buffers' addresses",
                 .forward = path_by_alignment_forward,
                 .forward_v2 = path_by_alignment_forward_v2,
                 .promises = ATTNCHECK_PROMISE_DETERMINISTIC,
                 .pinned_laws = {"rerun_bit_identical"},
                 .diagnosis = "a kernel whose last bits follow where its buffers lie"}),

      // ABI v3's packed batches: reference's packed forward with one fault of
      // a varlen kernel, right on padded calls; caught by the packed laws at
      // every seed (no fault model names a packed fault yet: undiagnosed,
      // diagnose_v2_test says why). empty_sequences catches it where a
      // sequence has kv_lens 0 in a non-empty key slot: its rows see keys.
      packed_member({.name = "packed_kv_lens_ignored",
                     .description = "with packed keys, attends every key of a sequence's slot: kv_lens (seqused_k) "
                                    "ignored for cu_seqlens_k calls",
                     .forward_v3 = packed_kv_lens_ignored_forward_v3,
                     .pinned_laws = {"slack_inert_and_untouched", "packed_equals_padded", "empty_sequences"}}),
      // Right on every call whose bounds are the slots' (the drawn packed
      // cases, mostly): bounds_inert raises kv_len by 128 keys or more.
      packed_member({.name = "packed_empty_split_nan",
                     .description = "packed keys split in partitions of 64 counted from kv_len (max_seqlen_k): a "
                                    "partition past a sequence's keys normalises 0/0, and the combine's 0 x NaN makes "
                                    "the sequence's out NaN (vllm-project/flash-attention#190)",
                     .forward_v3 = packed_empty_split_nan_forward_v3,
                     .pinned_laws = {"bounds_inert"}}),
      // Right for a batch already sorted (the longest query slot first):
      // sequence_order reorders it.
      packed_member({.name = "packed_outputs_sorted",
                     .description = "schedules a packed batch longest query slot first and writes each sequence's "
                                    "out rows at its sorted place's packed offset, never put back "
                                    "(flash-attention#1823's virtual batch index)",
                     .forward_v3 = packed_outputs_sorted_forward_v3,
                     .pinned_laws = {"sequence_order"}}),
      // Right on every call but a packed one with a keyless sequence (and no
      // sinks): empty_sequences draws one in every case it judges, and
      // packed_equals_padded's padded twin of such a case is right.
      packed_member({.name = "packed_keyless_rows_nan",
                     .description = "in a packed call, a sequence with query rows but no keys gets out = 0/0 = NaN: "
                                    "no guard for an empty key range (lse -inf is right by accident)",
                     .forward_v3 = packed_keyless_rows_nan_forward_v3,
                     .pinned_laws = {"empty_sequences", "packed_equals_padded"}}),

      // ABI v3's ALiBi slopes per (batch, head): reference's forward with one
      // fault of a kernel taking (batch, heads) slopes (undiagnosed:
      // diagnose_v2_test says why).
      alibi_batch_member({.name = "alibi_batch_first_row",
                          .description = "with ALiBi slopes per (batch, head), every batch entry uses entry 0's row "
                                         "of slopes: alibi_batch_stride read as 0",
                          .forward_v3 = alibi_batch_first_row_forward_v3,
                          .pinned_laws = {"alibi_batch_matches_alone"}}),

      // ABI v3's broadcast K and V: reference's forward with one fault of a
      // kernel handed an expanded tensor (undiagnosed: diagnose_v2_test says why).
      broadcast_kv_member({.name = "broadcast_stride_as_dense",
                           .description = "a k or v view with stride 0 on its batch or kv-head axis read with dense "
                                          "strides recomputed from the extents (pytorch/pytorch#191937)",
                           .forward_v3 = broadcast_stride_as_dense_forward_v3,
                           .pinned_laws = {"broadcast_equals_materialized"}}),

      // ABI v3's stored K and V formats: reference's forward with one fault of a
      // quantized-cache kernel (no fault model reads a stored format yet:
      // undiagnosed, diagnose_v2_test says why).
      kv_format_member({.name = "kv_scale_ignored",
                        .description = "the scales of fp8, int8 and int4 K and V never applied (each read as 1): "
                                       "flashinfer#4979, ragged prefill ignored k_scale/v_scale",
                        .forward_v3 = kv_scale_ignored_forward_v3,
                        .pinned_laws = {"quantized_matches_oracle"}}),
      kv_format_member({.name = "q4_0_nibbles_interleaved",
                        .description = "q4_0 blocks read as int4's pairs (channel 2i low, 2i+1 high nibble of qs[i]) "
                                       "instead of ggml's halves (j low, 16+j high)",
                        .forward_v3 = q4_0_nibbles_interleaved_forward_v3,
                        .pinned_laws = {"quantized_matches_oracle"}}),
      kv_format_member({.name = "int4_nibbles_as_halves",
                        .description = "int4 rows read as q4_0's halves by 32 channels (j low, 16+j high nibble) "
                                       "instead of the ABI's pairs (2i low, 2i+1 high)",
                        .forward_v3 = int4_nibbles_as_halves_forward_v3,
                        .pinned_laws = {"equal_values_across_formats"}}),
      kv_format_member({.name = "kv_dequant_saturated",
                        .description = "dequantized K and V (code x scale) clamped to +-448 as an fp8 operand path's "
                                       "satfinite conversion does: values the scale makes larger saturate",
                        .forward_v3 = kv_dequant_saturated_forward_v3,
                        .pinned_laws = {"scale_power_of_two"}}),
      kv_format_member({.name = "kv_dead_block_nan",
                        .description = "a sequence's last block of 16 keys computed whole, keys past Lk with weight 0: "
                                       "0 x NaN = NaN from a dead V code (vllm#53628)",
                        .forward_v3 = kv_dead_block_nan_forward_v3,
                        .pinned_laws = {"dead_codes_inert"}}),

      // ABI v3's paged keys: reference's paged forward with one fault of a
      // paged kernel each, right on unpaged calls (no fault model reads a
      // paged call yet: undiagnosed, diagnose_v2_test says why).
      paged_member({.name = "paged_short_sequence_zeros",
                    .description = "a paged sequence shorter than one page comes back as zeros (out 0, lse -inf): "
                                   "flashinfer#725",
                    .forward_v3 = paged_short_sequence_zeros_forward_v3,
                    .pinned_laws = {"paged_equals_contiguous", "page_size_independence"}}),
      paged_member({.name = "paged_last_page_unmasked",
                    .description = "reads each sequence's last page whole: keys past Lk in it (dead slots) attended",
                    .forward_v3 = paged_last_page_unmasked_forward_v3,
                    .pinned_laws = {"dead_page_bytes_inert", "paged_equals_contiguous"}}),
      paged_member({.name = "paged_extra_page_on_boundary",
                    .description = "reads one page more when Lk is a multiple of page_size (a last page of length 0 "
                                   "read as full): the first unread table entry's page attended",
                    .forward_v3 = paged_extra_page_on_boundary_forward_v3,
                    .pinned_laws = {"unread_table_entries_inert"}}),
      paged_member({.name = "paged_path_by_page_number",
                    .description = "sums in naive's order when the first page's number is odd, reference's else: the "
                                   "last bits follow where pages lie (pytorch#182593)",
                    .forward_v3 = paged_path_by_page_number_forward_v3,
                    .pinned_laws = {"page_permutation_bit_identical"}}),
      paged_member({.name = "paged_slot_stride_from_head",
                    .description = "the pool's slot and kv-head strides swapped: a paged kernel for NHD pages "
                                   "handed HND ones (or the other way)",
                    .forward_v3 = paged_slot_stride_from_head_forward_v3,
                    .pinned_laws = {"paged_equals_contiguous"}}),
      paged_member({.name = "paged_alias_length_overwritten",
                    .description = "a page's valid slots kept once per page, the last reader's count winning: "
                                   "readers of an aliased page read zeros past it",
                    .forward_v3 = paged_alias_length_overwritten_forward_v3,
                    .pinned_laws = {"page_alias_equals_copy"}}),

      // ABI v3's V as a view of K (MLA): reference's forward with one fault of
      // an MLA kernel, right whenever v has its own memory (undiagnosed:
      // diagnose_v2_test says why).
      v_view_member({.name = "v_view_row_stride_by_value_dim",
                     .description = "with v a view of k, steps V's rows by value_dim instead of k's stride: right "
                                    "for the first key, drifting after (ik_llama.cpp#2031)",
                     .forward_v3 = v_view_row_stride_by_value_dim_forward_v3,
                     .pinned_laws = {"mla_matches_oracle", "v_view_equals_copy"}}),

      // The backward zoo (issue #15): reference's forward, reference's backward
      // with one fault, each by the gradient law its fault breaks on almost
      // every case (tests/core/grad_laws_test.cpp shows each on a plain
      // backward with the same fault).
      backward_member({.name = "grad_no_rowsum",
                       .description = "backward without the rowsum term: dS = P * dP instead of P * (dP - rowsum(dO * O))",
                       .backward_v2 = grad_no_rowsum_backward_v2,
                       .pinned_laws = {"grad_matches_oracle", "grad_key_shift_zero", "grad_consistent_with_forward"},
                       .diagnosis = "a backward whose dS lacks the rowsum term"}),
      backward_member({.name = "grad_dq_unscaled",
                       .description = "backward: dQ = dS K without the softmax scale",
                       .backward_v2 = grad_dq_unscaled_backward_v2,
                       .pinned_laws = {"grad_matches_oracle", "grad_consistent_with_forward"},
                       .diagnosis = "a backward whose dq lacks the softmax scale"}),
      backward_member({.name = "grad_gqa_first_head",
                       .description = "backward: a kv head's dK and dV from the first query head of its group, not the sum",
                       .backward_v2 = grad_gqa_first_head_backward_v2,
                       .pinned_laws = {"grad_matches_oracle", "grad_gqa_sums_group"},
                       .diagnosis = "a backward that takes a GQA group's dk and dv from its first query head"}),
      backward_member({.name = "grad_dv_unnormalised",
                       .description = "backward: dV from exp(z - rowmax) without dividing by the row's sum",
                       .backward_v2 = grad_dv_unnormalised_backward_v2,
                       .pinned_laws = {"grad_matches_oracle", "grad_values_sum", "grad_consistent_with_forward"},
                       .diagnosis = "a backward whose dv uses unnormalised weights"}),
      backward_member({.name = "grad_nan_empty_rows",
                       .description = "backward: dq of a row that sees no key is NaN (0/0 of its empty normaliser), not 0",
                       .backward_v2 = grad_nan_empty_rows_backward_v2,
                       .pinned_laws = {"grad_empty_rows_zero"},
                       .diagnosis = "a backward that writes NaN into dq of rows that see no key"}),
      backward_member({.name = "grad_softcap_derivative_dropped",
                       .description = "backward: the soft-cap's derivative 1 - tanh^2(s / softcap) left out of dS",
                       .backward_v2 = grad_softcap_derivative_dropped_backward_v2,
                       .pinned_laws = {"grad_matches_oracle", "grad_consistent_with_forward"},
                       .diagnosis = "a backward that leaves out the soft-cap's derivative"}),
      backward_member({.name = "grad_dk_accumulated",
                       .description = "backward: dk += onto what the buffer held instead of overwritten",
                       .backward_v2 = grad_dk_accumulated_backward_v2,
                       .pinned_laws = {"grad_matches_oracle", "grad_linear_in_dout", "grad_key_shift_zero",
                                       "grad_key_permutation_equivariance", "grad_query_permutation_equivariance",
                                       "grad_layout_invariance"},
                       .diagnosis = "a backward that accumulates dk into what the buffer held"}),
      // As accurate as the references: grad_deterministic tells it apart.
      backward_member({.name = "grad_dk_race_order",
                       .description = "backward: dk summed over query rows in an order that changes between calls "
                                      "(atomicAdd from racing blocks): last bits differ",
                       .reset = grad_dk_race_order_reset,
                       .backward_v2 = grad_dk_race_order_backward_v2,
                       .pinned_laws = {"grad_deterministic"},
                       .diagnosis = "a backward whose dk reduction order changes between calls"}),
      // Promises a deterministic backward (ABI v3); as accurate as reference,
      // repeatable in place: only backward_rerun_bit_identical, which moves
      // the buffers, tells it apart (diagnosis/promise_diagnosis.h names it).
      backward_member({.name = "grad_dk_order_by_alignment",
                       .description = "backward promising determinism whose dk sum over the query rows runs last to "
                                      "first when dk is aligned to 128 bytes: last bits follow dk's address",
                       .backward_v2 = grad_dk_order_by_alignment_backward_v2,
                       .promises = ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD,
                       .pinned_laws = {"backward_rerun_bit_identical"},
                       .diagnosis = "a kernel whose last bits follow where its buffers lie"}),
  };
  return all;
}

const BuiltinInfo* find_builtin(std::string_view name) {
  for (const BuiltinInfo& b : builtins())
    if (b.name == name) return &b;
  return nullptr;
}

}  // namespace attncheck
