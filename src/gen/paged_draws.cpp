#include "gen/paged_draws.h"

#include <algorithm>

#include "problem/paging.h"

namespace attncheck::gen {

namespace {

// Every live key of an aliased slot made the first reader's (k and v, every kv head).
void share_aliased_values(Problem& p) {
  const Shape& s = p.shape;
  const int64_t kvh = s.kv_head_count();
  for (const AliasedKey& a : aliased_keys(p))
    for (int64_t h = 0; h < kvh; ++h) {
      for (int64_t d = 0; d < s.head_dim; ++d) p.k[p.k_at(a.b * kvh + h, a.j, d)] = p.k[p.k_at(a.b0 * kvh + h, a.j0, d)];
      for (int64_t c = 0; c < s.value_dim; ++c) p.v[p.v_at(a.b * kvh + h, a.j, c)] = p.v[p.v_at(a.b0 * kvh + h, a.j0, c)];
    }
}

}  // namespace

template <class C>
void draw_paging(C& r, Problem& p) {
  static constexpr int64_t kPageSizes[] = {1, 2, 3, 4, 5, 16, 64, 128, 256};
  const Shape& s = p.shape;
  const int64_t ps = kPageSizes[r.integer(0, std::size(kPageSizes) - 1)];
  p.page_size = ps;
  p.max_pages_per_seq = (s.kv_len + ps - 1) / ps + r.integer(0, 2);
  // The pages each sequence reads: fresh ones in order, about three in ten an
  // alias of a page already given out (to this row or an earlier one), 60%
  // of those an earlier row's last page, often partly filled (beam search and
  // forks share a sequence's partial last block copy-on-write).
  std::vector<int32_t> given, last_given;
  int32_t fresh = 0;
  p.block_table.assign(static_cast<std::size_t>(s.batch * p.max_pages_per_seq), -1);
  auto any_of = [&](const std::vector<int32_t>& pages) {
    return pages[static_cast<std::size_t>(r.integer(0, static_cast<int64_t>(pages.size()) - 1))];
  };
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t used = (p.kv_len_of(b) + ps - 1) / ps;
    for (int64_t e = 0; e < used; ++e) {
      int32_t page = fresh;
      if (!given.empty() && r.chance(0.3)) page = !last_given.empty() && r.chance(0.6) ? any_of(last_given) : any_of(given);
      if (page == fresh) ++fresh;
      given.push_back(page);
      p.block_table[static_cast<std::size_t>(b * p.max_pages_per_seq + e)] = page;
    }
    if (used > 0) last_given.push_back(given.back());
  }
  p.num_pages = std::max<int64_t>(1, fresh + r.integer(0, 2));  // pages no sequence reads
  // The pool's order: a random permutation of the page numbers.
  std::vector<int32_t> perm(static_cast<std::size_t>(p.num_pages));
  for (std::size_t g = 0; g < perm.size(); ++g) perm[g] = static_cast<int32_t>(g);
  for (std::size_t g = perm.size(); g > 1; --g)
    std::swap(perm[g - 1], perm[static_cast<std::size_t>(r.integer(0, static_cast<int64_t>(g) - 1))]);
  for (int32_t& e : p.block_table)  // entries past a sequence's pages: any page
    e = e < 0 ? static_cast<int32_t>(r.integer(0, p.num_pages - 1)) : perm[static_cast<std::size_t>(e)];
  p.page_poison = r.integer(0, kPagePoisonCodes - 1);
  share_aliased_values(p);  // k's and v's layouts (STRIDES) now order the pool's axes (call/paged_pool.h)
}

template void draw_paging(RandomChoices&, Problem&);
template void draw_paging(ByteChoices&, Problem&);

void shrink_paging(const Problem& p, std::vector<Problem>& out) {
  if (!p.paged()) return;
  out.push_back(unpaged(p));
  if (p.page_size > 1) out.push_back(paged_plainly(p, 1));
  const Problem plain = paged_plainly(p, p.page_size);
  if (!(plain == p)) out.push_back(plain);
  if (p.page_poison != kPagePoisonNaN) {
    Problem c = p;
    c.page_poison = kPagePoisonNaN;
    out.push_back(std::move(c));
  }
}

}  // namespace attncheck::gen
