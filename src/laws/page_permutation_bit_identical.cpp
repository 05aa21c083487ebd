// page_permutation_bit_identical (ABI v3, "Paged caches"): the pool's pages
// relabelled by a permutation (reversed, and rotated by one), every table
// entry rewritten to follow its page, give the case's out and lse bit for bit
// when the implementation reruns the case bit for bit (else within the sum of
// the bounds): the same keys in the same order, only their physical place
// changed (the dead bytes move with their pages).
//
// Catches: a kernel whose result follows where pages lie (summation order or
// path by page number, flex attention's pytorch/pytorch#182593), one that
// reads page b*max_pages_per_seq + t/page_size or consecutive pages instead
// of the table (the permuted pool then hands it other keys). Cannot catch: a
// fault the permutation keeps (a page read through the table at the wrong
// slot stride: paged_equals_contiguous and matches_oracle judge that), or a
// pool of one page (not applicable).
#include <numeric>

#include "law_framework/law_support.h"
#include "law_framework/paged_calls.h"
#include "problem/paging.h"

namespace attncheck {

Law law_page_permutation_bit_identical() {
  Law law;
  law.name = "page_permutation_bit_identical";
  law.statement = "relabelling the pool's pages (and rewriting the table) changes no bit of out and lse";
  law.features = kAllFeatures | kPackedFeature | kPagedFeature;
  law.required = kPagedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.paged()) return Verdict::not_applicable("not paged");
    const int64_t n = p.num_pages;
    if (n < 2) return Verdict::not_applicable("a pool of one page: nothing to permute");
    std::vector<int32_t> reversed(static_cast<std::size_t>(n)), rotated(static_cast<std::size_t>(n));
    for (int64_t g = 0; g < n; ++g) {
      reversed[static_cast<std::size_t>(g)] = static_cast<int32_t>(n - 1 - g);
      rotated[static_cast<std::size_t>(g)] = static_cast<int32_t>((g + 1) % n);
    }
    std::vector<PagedTwin> twins = {{"with its pages reversed", "the case with page g of the pool moved to page num_pages-1-g, the table rewritten",
                                     pages_renamed(p, reversed)}};
    if (n > 2)
      twins.push_back({"with its pages rotated", "the case with page g of the pool moved to page (g+1) % num_pages, the table rewritten",
                       pages_renamed(p, rotated)});
    return compare_with_twins(impl, p, twins, TwinRule::bitwise_if_rerun, "relabelling the pool's pages changed the result");
  };
  return law;
}

}  // namespace attncheck
