#include "host/v3_declaration.h"

#include <cstdio>

#include "attncheck/plugin_v3.h"

namespace attncheck {

namespace {

std::string v3_decl_hex(uint32_t bits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", bits);
  return text;
}

// The names after ATTNCHECK_FEATURE_, ATTNCHECK_KV_, ATTNCHECK_NUMERICS_ and
// ATTNCHECK_PROMISE_, lower case, by bit.
struct V3DeclBitName {
  uint32_t bit;
  const char* name;
};
constexpr V3DeclBitName kV3FeatureNames[] = {
    {ATTNCHECK_FEATURE_PAGED, "paged"},
    {ATTNCHECK_FEATURE_PACKED, "packed"},
    {ATTNCHECK_FEATURE_KV_FORMATS, "kv_formats"},
    {ATTNCHECK_FEATURE_ALIBI_BATCH, "alibi_batch"},
    {ATTNCHECK_FEATURE_V_VIEW_OF_K, "v_view_of_k"},
    {ATTNCHECK_FEATURE_BROADCAST_KV, "broadcast_kv"},
};
constexpr V3DeclBitName kV3NumericsNames[] = {
    {ATTNCHECK_NUMERICS_Q_AS_Q8_0, "q_as_q8_0"},
    {ATTNCHECK_NUMERICS_KV_PRECISION, "kv_precision"},
};
constexpr V3DeclBitName kV3PromiseNames[] = {
    {ATTNCHECK_PROMISE_DETERMINISTIC, "deterministic"},
    {ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD, "deterministic_backward"},
    {ATTNCHECK_PROMISE_BATCH_INVARIANT, "batch_invariant"},
};

constexpr uint32_t kV3BlockFormats = (1u << ATTNCHECK_KV_Q8_0) | (1u << ATTNCHECK_KV_Q4_0);
// The formats whose working type is 16-bit: what KV_PRECISION can apply to.
constexpr uint32_t kV3SixteenBitFormats =
    (1u << ATTNCHECK_KV_F16) | (1u << ATTNCHECK_KV_BF16) | kV3BlockFormats;

// The formats the plugin offers for K or V (kv_formats counts only with KV_FORMATS).
uint32_t v3_offered_formats(const V3Declaration& d) {
  return d.features & ATTNCHECK_FEATURE_KV_FORMATS ? d.kv_formats : 0;
}

const std::string kV3DeclWho = "attncheck_plugin_v3() declares ";

}  // namespace

std::string v3_declaration_refusal(const V3Declaration& d) {
  if (const uint32_t unknown = d.features & ~kV3FeatureBits)
    return kV3DeclWho + "features " + v3_decl_hex(d.features) + ", whose bits " + v3_decl_hex(unknown) +
           " no ATTNCHECK_FEATURE_* of ABI version 3 names (bits 0 to 16)";
  if ((d.features & ATTNCHECK_FEATURE_ALIBI_BATCH) && !(d.features & ATTNCHECK_FEATURE_ALIBI))
    return kV3DeclWho + "features " + v3_decl_hex(d.features) +
           ": ATTNCHECK_FEATURE_ALIBI_BATCH without ATTNCHECK_FEATURE_ALIBI, which it needs";
  if (const uint32_t unknown = d.kv_formats & ~kV3KvFormatBits)
    return kV3DeclWho + "kv_formats " + v3_decl_hex(d.kv_formats) + ", whose bits " + v3_decl_hex(unknown) +
           " no attncheck_kv_format names (formats 0 to 8: bits 0x1 to 0x100)";
  if ((d.features & ATTNCHECK_FEATURE_KV_FORMATS) && !(d.kv_formats & ~1u))
    return kV3DeclWho + "ATTNCHECK_FEATURE_KV_FORMATS with kv_formats " + v3_decl_hex(d.kv_formats) +
           ", which offers no format other than ATTNCHECK_KV_DTYPE";
  if (!(d.features & ATTNCHECK_FEATURE_KV_FORMATS) && (d.kv_formats & ~1u))
    return kV3DeclWho + "kv_formats " + v3_decl_hex(d.kv_formats) + " without ATTNCHECK_FEATURE_KV_FORMATS in features " +
           v3_decl_hex(d.features) + " (kv_formats counts only with that feature; 0 without it)";
  if (const uint32_t unknown = d.numerics & ~kV3NumericsBits)
    return kV3DeclWho + "numerics " + v3_decl_hex(d.numerics) + ", whose bits " + v3_decl_hex(unknown) +
           " no ATTNCHECK_NUMERICS_* names (bits 0 and 1)";
  if ((d.numerics & ATTNCHECK_NUMERICS_Q_AS_Q8_0) && !(v3_offered_formats(d) & kV3BlockFormats))
    return kV3DeclWho + "numerics " + v3_decl_hex(d.numerics) +
           " with ATTNCHECK_NUMERICS_Q_AS_Q8_0, which applies only to calls with K in Q8_0 or Q4_0, and kv_formats " +
           v3_decl_hex(d.kv_formats) + " offers neither";
  if ((d.numerics & ATTNCHECK_NUMERICS_KV_PRECISION) && !(v3_offered_formats(d) & kV3SixteenBitFormats))
    return kV3DeclWho + "numerics " + v3_decl_hex(d.numerics) +
           " with ATTNCHECK_NUMERICS_KV_PRECISION, which applies only to calls with K or V in F16, BF16, Q8_0 or "
           "Q4_0, and kv_formats " + v3_decl_hex(d.kv_formats) + " offers none of them";
  if (const uint32_t unknown = d.promises & ~kV3PromiseBits)
    return kV3DeclWho + "promises " + v3_decl_hex(d.promises) + ", whose bits " + v3_decl_hex(unknown) +
           " no ATTNCHECK_PROMISE_* names (bits 0 to 2)";
  if ((d.promises & ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD) && !d.has_backward)
    return kV3DeclWho + "promises " + v3_decl_hex(d.promises) +
           " with ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD, and its backward is NULL";
  return "";
}

// The promises some law judges (all three, since the promise laws).
constexpr uint32_t kV3JudgedPromises =
    ATTNCHECK_PROMISE_DETERMINISTIC | ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD | ATTNCHECK_PROMISE_BATCH_INVARIANT;

std::vector<std::string> v3_declarations_not_judged(const V3Declaration& d) {
  std::vector<std::string> out;
  // PACKED and PAGED are judged, forward calls (packed_equals_padded,
  // slack_inert_and_untouched, empty_sequences, sequence_order, bounds_inert;
  // paged_equals_contiguous,
  // page_permutation_bit_identical, page_size_independence,
  // dead_page_bytes_inert, unread_table_entries_inert, page_alias_equals_copy, matches_oracle: in the default
  // catalogue). KV_FORMATS and every format it offers: quantized_matches_oracle
  // draws each offered format for K and for V (forward, padded keys).
  // V_VIEW_OF_K: mla_matches_oracle (forward; padded, packed or paged keys) and
  // v_view_equals_copy.
  constexpr uint32_t kJudgedFeatures = ATTNCHECK_FEATURE_PACKED | ATTNCHECK_FEATURE_PAGED | ATTNCHECK_FEATURE_KV_FORMATS |
                                     ATTNCHECK_FEATURE_V_VIEW_OF_K;
  // ALIBI_BATCH: alibi_batch_matches_alone (forward, padded calls).
  // BROADCAST_KV: broadcast_equals_materialized (forward, padded calls).
  constexpr uint32_t kJudgedAlibiBroadcast = ATTNCHECK_FEATURE_ALIBI_BATCH | ATTNCHECK_FEATURE_BROADCAST_KV;
  for (const V3DeclBitName& f : kV3FeatureNames)
    if ((d.features & f.bit) && !(f.bit & (kJudgedFeatures | kJudgedAlibiBroadcast)))
      out.push_back(std::string("feature ") + f.name);
  // Q_AS_Q8_0: the oracle's bound widens by its allowance on the calls with K in
  // Q8_0 or Q4_0 (Problem::numerics, oracle/numerics_allowance.h), judged by
  // quantized_matches_oracle and every oracle law that draws such calls.
  constexpr uint32_t kJudgedNumerics = ATTNCHECK_NUMERICS_Q_AS_Q8_0;
  for (const V3DeclBitName& n : kV3NumericsNames)
    if (d.numerics & n.bit & ~kJudgedNumerics) out.push_back(std::string("numerics ") + n.name);
  // Every promise is judged (for calls of version 2's shape) by its law:
  // rerun_bit_identical, backward_rerun_bit_identical,
  // batch_invariance (src/laws/); none is named here.
  for (const V3DeclBitName& p : kV3PromiseNames)
    if (d.promises & p.bit & ~kV3JudgedPromises) out.push_back(std::string("promise ") + p.name);
  return out;
}

}  // namespace attncheck
