// page_alias_equals_copy (ABI v3, "Paged caches"): a page the table names more
// than once among the pages sequences read (prefix caching: in several rows;
// vLLM's tests: twice in one row) replaced, at its last use, by a fresh copy
// (one more page, holding the keys that use reads), and then every repeated
// use replaced by its own copy, gives the case's out and lse bit for bit when
// the implementation reruns the case bit for bit, else within the bounds.
//
// Catches: a kernel that assumes distinct pages (a page's valid slots, or its
// loaded tile, taken from the first sequence that read it; a page visited
// once per batch). Cannot catch: a fault of aliased pages that a copy shares
// (read at the wrong stride: paged_equals_contiguous), or a case without an
// aliased page (not applicable).
#include <vector>

#include "law_framework/law_support.h"
#include "law_framework/paged_calls.h"

namespace attncheck {

namespace {

// Each used table entry (b * max_pages_per_seq + e, e < ceil(Lk / page_size)) in table order.
std::vector<std::size_t> used_entries(const Problem& p) {
  std::vector<std::size_t> used;
  for (int64_t b = 0; b < p.shape.batch; ++b)
    for (int64_t e = 0; e < p.pages_used_by(b); ++e) used.push_back(static_cast<std::size_t>(b * p.max_pages_per_seq + e));
  return used;
}

}  // namespace

Law law_page_alias_equals_copy() {
  Law law;
  law.name = "page_alias_equals_copy";
  law.statement = "an aliased page replaced by a fresh copy of it changes no bit of out and lse";
  law.features = kAllFeatures | kPackedFeature | kPagedFeature;
  law.required = kPagedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.paged()) return Verdict::not_applicable("not paged");
    // Uses of a page after its first, in table order.
    const std::vector<std::size_t> used = used_entries(p);
    std::vector<bool> seen(static_cast<std::size_t>(p.num_pages), false);
    std::vector<std::size_t> repeats;
    for (std::size_t at : used) {
      const auto page = static_cast<std::size_t>(p.block_table[at]);
      if (seen[page]) repeats.push_back(at);
      seen[page] = true;
    }
    if (repeats.empty()) return Verdict::not_applicable("no page is read twice");
    Problem one = p;  // the last repeated use gets its own copy
    one.block_table[repeats.back()] = static_cast<int32_t>(p.num_pages);
    one.num_pages = p.num_pages + 1;
    Problem all = p;  // every repeated use its own copy
    for (std::size_t at : repeats) all.block_table[at] = static_cast<int32_t>(all.num_pages++);
    std::vector<PagedTwin> twins = {{"with one alias copied",
                                     "the case with the last repeated use of a page replaced by a fresh copy of it", one}};
    if (repeats.size() > 1)
      twins.push_back({"with every alias copied", "the case with every repeated use of a page replaced by its own copy", all});
    return compare_with_twins(impl, p, twins, TwinRule::bitwise_if_rerun, "an aliased page and its copy gave different results");
  };
  return law;
}

}  // namespace attncheck
