// The oracle's kernels in each vector build this CPU runs (parallel/vector_isa.h,
// oracle/simd_native.h). The AVX-512 and AVX2 builds do the same arithmetic
// lane by lane, with the same FMAs and the same order of every reduction, so
// they must give the same bits: a difference is a fault in one build's
// passes or lanes (a pass that skips columns, a reduction in another order).
// The baseline has no FMA: its exact values agree far inside the bound and its
// bounds at second order.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "parallel/vector_isa.h"
#include "oracle/oracle.h"
#include "oracle/oracle_paths.h"
#include "gen/generators.h"

namespace attncheck {
namespace {

// Both blocked paths, head by head, bypassing oracle()'s memo (a result kept
// from another build would hide this one).
OracleResult paths(const Problem& p) {
  OracleResult o = oracle_detail::sized_result(p.shape);
  const bool f64 = compute_dtype(p.dtype) == DType::f64;
  for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
    f64 ? oracle_detail::fast_head_f64(p, bh, o) : oracle_detail::fast_head(p, bh, o);
  return o;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// Problems of every dtype, family and v2 feature, with rows long enough for
// whole tiles, partial tiles and several float chunks (kFloatChunk = 64).
std::vector<Problem> draws() {
  std::vector<Problem> out;
  GenOptions g;
  g.families = kAllFamilies;
  g.features = kV1Features | ATTNCHECK_FEATURE_GQA | ATTNCHECK_FEATURE_LENGTHS | ATTNCHECK_FEATURE_WINDOW |
               ATTNCHECK_FEATURE_SOFTCAP | ATTNCHECK_FEATURE_BIAS | ATTNCHECK_FEATURE_ALIBI | ATTNCHECK_FEATURE_SINKS;
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    g.dtypes = {t};
    g.max_kv_len = 200;
    g.max_head_dim = 140;
    g.max_value_dim = 40;
    for (uint64_t seed = 1; seed <= 40; ++seed) out.push_back(sample_problem(g, seed));
  }
  return out;
}

OracleResult in_build(VectorIsa isa, const Problem& p) {
  ScopedVectorIsa cap(isa);
  EXPECT_EQ(vector_isa(), isa);
  return paths(p);
}

TEST(OracleBuilds, Avx2GivesTheSameBitsAsAvx512) {
  if (detected_vector_isa() < VectorIsa::avx512) GTEST_SKIP() << "this CPU has no AVX-512 build to compare with";
  int64_t elements = 0;
  for (const Problem& p : draws()) {
    SCOPED_TRACE(p.header());
    const OracleResult a = in_build(VectorIsa::avx512, p), b = in_build(VectorIsa::avx2, p);
    EXPECT_TRUE(same_bits(a.exact, b.exact));
    EXPECT_TRUE(same_bits(a.bound, b.bound));
    EXPECT_TRUE(same_bits(a.lse_exact, b.lse_exact));
    EXPECT_TRUE(same_bits(a.lse_bound, b.lse_bound));
    EXPECT_TRUE(same_bits(a.entropy, b.entropy));
    EXPECT_EQ(a.row_in_domain, b.row_in_domain);
    elements += static_cast<int64_t>(a.exact.size());
    if (HasFailure()) return;
  }
  EXPECT_GT(elements, 20000);
}

TEST(OracleBuilds, BaselineAgreesWithTheBestBuild) {
  const VectorIsa best = detected_vector_isa();
  if (best == VectorIsa::baseline) GTEST_SKIP() << "this CPU runs the baseline build only";
  int64_t judged = 0;
  double worst_exact = 0, lowest = INFINITY, highest = 0;
  for (const Problem& p : draws()) {
    SCOPED_TRACE(p.header());
    const OracleResult a = in_build(best, p), b = in_build(VectorIsa::baseline, p);
    ASSERT_EQ(a.row_in_domain, b.row_in_domain);
    for (std::size_t k = 0; k < a.exact.size(); ++k) {
      ASSERT_EQ(std::isinf(a.bound[k]), std::isinf(b.bound[k])) << "element " << k;
      if (std::isinf(a.bound[k]) || !(a.bound[k] > 1e-290)) continue;
      ++judged;
      worst_exact = std::max(worst_exact, std::abs(a.exact[k] - b.exact[k]) / a.bound[k]);
      lowest = std::min(lowest, b.bound[k] / a.bound[k]);
      highest = std::max(highest, b.bound[k] / a.bound[k]);
    }
  }
  EXPECT_GT(judged, 20000);
  // Both are double (or double-word) evaluations of the same sums: apart by
  // their roundings, far below what the bound allows.
  EXPECT_LT(worst_exact, 1e-3);
  EXPECT_GT(lowest, 1 - 1e-6);
  EXPECT_LT(highest, 1 + 1e-6);
  std::printf("baseline against %s: %lld elements, bounds in [%.9f, %.9f], exact apart by %.3g bounds\n",
              vector_isa_name(best), static_cast<long long>(judged), lowest, highest, worst_exact);
}

}  // namespace
}  // namespace attncheck
