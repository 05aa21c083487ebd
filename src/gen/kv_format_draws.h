// Drawing and shrinking ABI v3's stored K and V formats (problem.h, "stored formats of K and
// V"; docs/abi/plugin-abi-v3.md, "Stored formats of K and V"): for an implementation that
// declares KV_FORMATS and a law whose features name it, a forward problem with padded, dense
// keys stores K and V each in a format drawn from those the implementation offers (its
// kv_formats, GenOptions::kv_formats) that the dtype allows and the channels fit (INT4: even;
// Q8_0, Q4_0: multiples of 32), K and V independently, DTYPE (unquantized) among them. A scaled
// format draws its granularity (per tensor, per kv head, per (batch, kv head), per (kv head,
// channel)) and scales (1 + m/128) 2^e, at most 8 significant bits, with e set so the largest
// real value is near 1; a block format draws each block's d (binary16, either sign, now and
// then 0 or subnormal). The values are DRAWN AS CODES (every finite code of the format, so
// subnormal fp8 codes and int8's -128 come), and the real values code * scale written into
// k and v: every value is exactly what its code means, so the call's bytes are exact.
// Nothing is drawn without kKvFormatsFeature in GenOptions::features, so every other law's
// seeds draw what they drew.
//
// Example usage (inside draw_late_features, last):
//   if (!p.is_backward() && want(kKvFormatsFeature, 0.7)) draw_kv_formats(r, p, o.kv_formats);
#pragma once

#include <cstdint>
#include <vector>

#include "gen/choice_source.h"
#include "problem/problem.h"

namespace attncheck::gen {

template <class C>
void draw_kv_formats(C& r, Problem& p, uint32_t offered);
extern template void draw_kv_formats(RandomChoices&, Problem&, uint32_t);
extern template void draw_kv_formats(ByteChoices&, Problem&, uint32_t);

// Stores one side (K: is_k) in format f with granularity g (scaled formats), its values drawn
// as codes. The problem must be padded, dense and forward, and f must fit its channels.
template <class C>
void store_kv_side(C& r, Problem& p, bool is_k, KvFormat f, ScaleGranularity g);
extern template void store_kv_side(RandomChoices&, Problem&, bool, KvFormat, ScaleGranularity);
extern template void store_kv_side(ByteChoices&, Problem&, bool, KvFormat, ScaleGranularity);

// The side back in the dtype: its real values rounded to the dtype, no scales.
void unstore_kv_side(Problem& p, bool is_k);

// Shrink candidates of the formats, most drastic first: both K and V unquantized (DTYPE,
// the real values rounded to the dtype), then K alone, then V alone.
void shrink_kv_formats(const Problem& p, std::vector<Problem>& out);

}  // namespace attncheck::gen
