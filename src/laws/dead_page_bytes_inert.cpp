// dead_page_bytes_inert (ABI v3, "Paged caches" and "Dead bytes"; the spec's
// "Laws version 3 makes possible"): the bytes of a paged call's pool
// [num_pages][page_size][kv_heads][dim] that no sequence reads change
// nothing: the case with every dead slot (slots past a sequence's Lk in its
// last page, unread pages, the pages behind unread table entries) holding
// each other poison (NaN, +inf, -inf, huge) gives the case's out and lse bit
// for bit when the implementation reruns the case bit for bit, else within
// the bounds. Not applicable when every slot of the pool is read.
//
// Catches: a last page loaded whole without masking slots >= Lk (vLLM's 0x7F
// fill; FlashInfer's test_batch_mla_oob_kv_nan; vllm#53628 let 0 x NaN
// through), an unread page or a page behind an unread entry read at all.
// Cannot catch: a dead read that every poison leaves without effect (an exact
// 0 weight times a finite value), one whose poison the case's own mask
// hides, or a kernel that follows an unread table entry to a page someone
// reads (live values, not poison: unread_table_entries_inert).
#include <vector>

#include "law_framework/law_support.h"
#include "law_framework/paged_calls.h"

namespace attncheck {

namespace {

// Whether some slot of the pool is read by no sequence (slot s of page
// block_table[b][e] is read when e * page_size + s < Lk of b).
bool pool_has_dead_slot(const Problem& p) {
  std::vector<char> read(static_cast<std::size_t>(p.num_pages * p.page_size), 0);
  for (int64_t b = 0; b < p.shape.batch; ++b)
    for (int64_t j = 0; j < p.kv_len_of(b); ++j)
      read[static_cast<std::size_t>(p.page_of(b, j) * p.page_size + j % p.page_size)] = 1;
  for (char r : read)
    if (!r) return true;
  return false;
}

}  // namespace

Law law_dead_page_bytes_inert() {
  Law law;
  law.name = "dead_page_bytes_inert";
  law.statement = "dead slots, unread pages and the pages behind unread table entries change nothing when poisoned";
  law.features = kAllFeatures | kPackedFeature | kPagedFeature;
  law.required = kPagedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.paged()) return Verdict::not_applicable("not paged");
    if (!pool_has_dead_slot(p)) return Verdict::not_applicable("every slot of the pool is read");
    static const char* const kPoisons[] = {"NaN", "+inf", "-inf", "a huge finite value"};
    std::vector<PagedTwin> twins;
    for (int64_t code = 0; code < kPagePoisonCodes; ++code) {
      if (code == p.page_poison) continue;
      Problem c = p;
      c.page_poison = code;
      twins.push_back({std::string("with ") + kPoisons[code] + " in its dead slots",
                       std::string("the case with every slot no sequence reads holding ") + kPoisons[code], c});
    }
    return compare_with_twins(impl, p, twins, TwinRule::bitwise_if_rerun, "bytes no sequence reads changed the result");
  };
  return law;
}

}  // namespace attncheck
