// unread_table_entries_inert (ABI v3, "Paged caches"; the spec's "Laws version
// 3 makes possible"): the block table's entries past each sequence's
// ceil(Lk / page_size) pages (block_table [batch][max_pages_per_seq]) may
// name any valid page, and which one changes nothing: the case with them
// rewritten (to the next page, to another sequence's first page, and to two
// new poisoned pages) gives the case's out and lse bit for bit when the
// implementation reruns the case bit for bit, else within the bounds. Not
// applicable when no sequence has an unread entry.
//
// Catches: a kernel that loads the next table entry ahead and lets it in
// (a live page of another sequence shows where poison alone might be masked
// away), a page count taken from max_pages_per_seq instead of Lk. Cannot
// catch: a last page loaded whole without masking slots >= Lk (the entry is
// read: dead_page_bytes_inert), or a read ahead whose keys an exact 0 weight
// leaves without effect.
#include "law_framework/law_support.h"
#include "law_framework/paged_calls.h"

namespace attncheck {

Law law_unread_table_entries_inert() {
  Law law;
  law.name = "unread_table_entries_inert";
  law.statement = "the table entries past a sequence's last page may name any valid page";
  law.features = kAllFeatures | kPackedFeature | kPagedFeature;
  law.required = kPagedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.paged()) return Verdict::not_applicable("not paged");
    bool any_unread = false;
    for (int64_t b = 0; b < p.shape.batch; ++b) any_unread = any_unread || p.pages_used_by(b) < p.max_pages_per_seq;
    if (!any_unread) return Verdict::not_applicable("every table entry is read");
    std::vector<PagedTwin> twins;
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
    return compare_with_twins(impl, p, twins, TwinRule::bitwise_if_rerun, "table entries no sequence reads changed the result");
  };
  return law;
}

}  // namespace attncheck
