// paged_equals_contiguous (ABI v3, "Paged caches"): the case's keys read
// from the page pool through block_table and the same keys padded (no table,
// k and v [batch][kv_heads][kv_len][dim], Lk as before) agree row for row
// within the sum of the two calls' bounds (the oracle's bound is the same
// for both: a paged call is the padded one, sequence by sequence).
//
// Catches: keys read without the table (page b*max_pages_per_seq +
// t/page_size, consecutive pages), a wrong slot or head stride in the pool
// (slot stride taken as the head stride: NHD read as HND), a sequence shorter
// than one page answered with zeros (flashinfer#725), keys of the next table
// entry or of a last page's slots past Lk let in. Cannot catch: a fault the
// padded call has too (matches_oracle judges that), or an implementation that
// refuses the padded form of every drawn case (not applicable, never passed).
#include "law_framework/law_support.h"
#include "law_framework/paged_calls.h"
#include "problem/paging.h"

namespace attncheck {

Law law_paged_equals_contiguous() {
  Law law;
  law.name = "paged_equals_contiguous";
  law.statement = "a paged call (block_table) gives, row for row, the out and lse of the same keys padded";
  law.features = kAllFeatures | kPackedFeature | kPagedFeature;
  law.required = kPagedFeature;
  law.check = [](Implementation& impl, const Problem& p) {
    if (!p.paged()) return Verdict::not_applicable("not paged");
    return compare_with_twins(impl, p, {{"padded", "the case's keys padded, without the table", unpaged(p)}},
                              TwinRule::within_bound, "the paged call differs from the same keys padded");
  };
  return law;
}

}  // namespace attncheck
