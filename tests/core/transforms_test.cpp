// head_alone (problem/transforms.h) on problems with every ABI v2 feature:
// each (batch, head) cut out alone is the same attention as its slice of the
// whole problem, so the oracle gives the same exact values and bounds. A cut
// that took another head's kv head (grouped heads), a mask or bias row of the
// wrong head (or read past a broadcast one), another batch's lengths or
// another head's ALiBi slope or sink changes them.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "oracle/oracle.h"
#include "gen/generators.h"
#include "problem/transforms.h"

namespace attncheck {
namespace {

TEST(HeadAlone, EachHeadAloneIsItsSliceOfTheWhole) {
  GenOptions g;
  g.families = kAllFamilies;
  g.min_heads = 2;
  g.max_heads = 6;
  g.max_batch = 3;
  g.features = kV1Features | ATTNCHECK_FEATURE_GQA | ATTNCHECK_FEATURE_LENGTHS | ATTNCHECK_FEATURE_WINDOW |
               ATTNCHECK_FEATURE_SOFTCAP | ATTNCHECK_FEATURE_BIAS | ATTNCHECK_FEATURE_ALIBI | ATTNCHECK_FEATURE_SINKS;
  int64_t heads = 0, grouped = 0, masked = 0, broadcast = 0, with_bias = 0, with_lengths = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    const Problem p = sample_problem(g, seed);
    SCOPED_TRACE(p.header());
    const Shape& s = p.shape;
    const OracleResult whole = oracle(p);
    grouped += s.kv_head_count() < s.heads;
    masked += p.has_mask();
    broadcast += (p.has_mask() && !p.mask_broadcast.full()) || (p.has_bias() && !p.bias_broadcast.full());
    with_bias += p.has_bias();
    with_lengths += !p.q_lens.empty() || !p.kv_lens.empty();
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
      const Problem alone = head_alone(p, bh);
      ASSERT_EQ(alone.q.size(), static_cast<std::size_t>(alone.shape.q_size()));
      ASSERT_EQ(alone.k.size(), static_cast<std::size_t>(alone.shape.k_size()));
      ASSERT_EQ(alone.v.size(), static_cast<std::size_t>(alone.shape.v_size()));
      if (alone.has_mask()) {
        ASSERT_EQ(alone.mask.size(), static_cast<std::size_t>(alone.mask_broadcast.size(alone.shape)));
      }
      if (alone.has_bias()) {
        ASSERT_EQ(alone.bias.size(), static_cast<std::size_t>(alone.bias_broadcast.size(alone.shape)));
      }
      const OracleResult part = oracle(alone);
      const int64_t n = s.q_len * s.value_dim, at = bh * n;
      for (int64_t k = 0; k < n; ++k) {
        ASSERT_EQ(std::memcmp(&part.exact[k], &whole.exact[at + k], sizeof(double)), 0) << "head " << bh << " element " << k;
        ASSERT_EQ(std::memcmp(&part.bound[k], &whole.bound[at + k], sizeof(double)), 0) << "head " << bh << " element " << k;
      }
      for (int64_t i = 0; i < s.q_len; ++i)
        ASSERT_EQ(std::memcmp(&part.lse_exact[i], &whole.lse_exact[bh * s.q_len + i], sizeof(double)), 0);
      ++heads;
    }
  }
  EXPECT_GT(heads, 400);
  EXPECT_GT(grouped, 10);
  EXPECT_GT(masked, 10);
  EXPECT_GT(broadcast, 5);
  EXPECT_GT(with_bias, 10);
  EXPECT_GT(with_lengths, 10);
}

}  // namespace
}  // namespace attncheck
