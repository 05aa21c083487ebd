#include "law_framework/paged_calls.h"

#include "law_framework/law_support.h"
#include "law_framework/packed_calls.h"
#include "oracle/oracle.h"

namespace attncheck {

Verdict compare_with_twins(Implementation& impl, const Problem& p, const std::vector<PagedTwin>& twins, TwinRule rule,
                           const std::string& what) {
  const Outcome drawn = impl.run(p);
  if (auto bad = unusable(drawn)) return *bad;
  bool bitwise = false;
  if (rule == TwinRule::bitwise_if_rerun)
    if (auto bad = rerun_is_bitwise(impl, p, drawn, bitwise)) return *bad;
  const OracleResult o = oracle(p);  // the twins' too: the same logical keys
  std::vector<int64_t> same(static_cast<std::size_t>(p.shape.batch));
  for (int64_t b = 0; b < p.shape.batch; ++b) same[static_cast<std::size_t>(b)] = b;
  for (const PagedTwin& twin : twins) {
    const Outcome again = impl.run(twin.problem);
    if (auto bad = unusable(again)) return *bad;
    if (auto m = rows_differ({p, drawn, o, "as drawn"}, {twin.problem, again, o, twin.name.c_str()}, same, bitwise))
      return Verdict::fail(what + ": " + *m).on({{"as drawn", "", p}, {twin.name, twin.how, twin.problem}});
  }
  bool any_row = false;
  for (int64_t b = 0; b < p.shape.batch; ++b) any_row = any_row || p.q_len_of(b) > 0;
  if (!any_row) return Verdict::not_applicable("every sequence has 0 query rows");
  return Verdict::pass();
}

}  // namespace attncheck
