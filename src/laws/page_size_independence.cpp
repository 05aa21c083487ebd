// page_size_independence (ABI v3, "Paged caches"): the case's keys paged
// again in order with pages of 1, 16 and 256 keys (each but the case's own
// size; no aliases, fresh pages, the case's poison in the dead slots) agree
// row for row with the case within the sum of the bounds.
//
// Catches: a sequence shorter than one page answered with zeros
// (flashinfer#725), page sizes above 128 mishandled (flashinfer#4347), a
// last partial page dropped or read whole, a slot index computed with a fixed
// page size. Cannot catch: a fault every page size shares (paged_equals_
// contiguous and matches_oracle judge it against the padded keys and the
// oracle), or a page size the implementation refuses (that twin is not
// applicable, never passed).
#include "law_framework/law_support.h"
#include "law_framework/paged_calls.h"
#include "problem/paging.h"

namespace attncheck {

Law law_page_size_independence() {
  Law law;
  law.name = "page_size_independence";
  law.statement = "the same keys paged with pages of 1, 16 and 256 keys give the same out and lse within the bound";
  law.features = kAllFeatures | kPackedFeature | kPagedFeature;
  law.required = kPagedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.paged()) return Verdict::not_applicable("not paged");
    std::vector<PagedTwin> twins;
    for (int64_t size : {1, 16, 256})
      if (size != p.page_size)
        twins.push_back({"with pages of " + std::to_string(size) + " keys",
                         "the case's keys paged in order, " + std::to_string(size) + " keys a page, no aliases",
                         paged_plainly(p, size)});
    return compare_with_twins(impl, p, twins, TwinRule::within_bound, "another page size changed the result");
  };
  return law;
}

}  // namespace attncheck
