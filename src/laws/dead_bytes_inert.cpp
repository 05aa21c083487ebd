// dead_bytes_inert (ABI v3, "Paged caches" and "Dead bytes"): the bytes of a
// paged call no sequence reads change nothing: the case with every dead slot
// (slots past a sequence's Lk in its last page, unread pages, the pages behind
// unread table entries) holding each other poison (NaN, +inf, -inf, huge),
// and with the table entries past each sequence's ceil(Lk / page_size)
// rewritten (to the next page, to another sequence's first page, and to two
// new poisoned pages), gives the case's out and lse bit for bit when the
// implementation reruns the case bit for bit, else within the bounds.
//
// Catches: a last page loaded whole without masking slots >= Lk, a kernel
// that loads the next table entry ahead and lets it in (vllm#53628 let 0 x NaN
// through; FlashInfer's test_batch_mla_oob_kv_nan; vLLM's 0x7F fill), an
// unread page read at all. Cannot catch: a dead read that every poison leaves
// without effect (an exact 0 weight times a finite value), or one whose
// poison the case's own mask hides.
#include "law_framework/law_support.h"
#include "law_framework/paged_calls.h"

namespace attncheck {

Law law_dead_bytes_inert() {
  Law law;
  law.name = "dead_bytes_inert";
  law.statement = "dead slots, unread pages and unread table entries change nothing when poisoned or renamed";
  law.features = kAllFeatures | kPackedFeature | kPagedFeature;
  law.required = kPagedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.paged()) return Verdict::not_applicable("not paged");
    static const char* const kPoisons[] = {"NaN", "+inf", "-inf", "a huge finite value"};
    std::vector<PagedTwin> twins;
    for (int64_t code = 0; code < kPagePoisonCodes; ++code) {
      if (code == p.page_poison) continue;
      Problem c = p;
      c.page_poison = code;
      twins.push_back({std::string("with ") + kPoisons[code] + " in its dead slots",
                       std::string("the case with every slot no sequence reads holding ") + kPoisons[code], c});
    }
    const int64_t n = p.num_pages;
    twins.push_back({"with unread entries moved", "the case with each table entry past a sequence's pages naming the next page",
                     with_unread_entries(p, [&](int64_t, int64_t, int32_t old) { return static_cast<int32_t>((old + 1) % n); })});
    twins.push_back({"with unread entries on others' pages",
                     "the case with each table entry past sequence b's pages naming the first page of sequence b+1 (or b-1)",
                     with_unread_entries(p, [&](int64_t b, int64_t, int32_t old) {
                       const int64_t other = (b + 1) % p.shape.batch;
                       return p.pages_used_by(other) > 0 ? p.block_table[static_cast<std::size_t>(other * p.max_pages_per_seq)]
                                                         : old;
                     })});
    Problem fresh = with_unread_entries(p, [&](int64_t, int64_t e, int32_t) { return static_cast<int32_t>(n + e % 2); });
    fresh.num_pages = n + 2;
    twins.push_back({"with unread entries on new pages", "the case with two more (poisoned) pages, every table entry past a sequence's pages naming one",
                     fresh});
    return compare_with_twins(impl, p, twins, TwinRule::bitwise_if_rerun, "bytes no sequence reads changed the result");
  };
  return law;
}

}  // namespace attncheck
