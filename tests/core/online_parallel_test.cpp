// `online` at shapes large enough for parallel_for to split it across threads
// (the property tests' shapes stay on one thread): every dtype, causal rule and
// a mask, with q_len != kv_len and value_dim != head_dim, matches the oracle,
// and gives bit for bit what the same call computes on one thread.
#include <random>

#include <gtest/gtest.h>

#include "impls/in_process.h"
#include "parallel/vector_isa.h"
#include "oracle/oracle.h"
#include "parallel/parallel_for.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// Batch 2, heads 2, 200 queries over 333 keys, head_dim 48, value_dim 40:
// 4 * 4 * 200 * 333 * 44 = 47 MFLOP, well above kMinParallelFlop, with a
// last query block (200 = 12 * 16 + 8) and key tile (333 = 10 * 32 + 13) cut short.
Problem parallel_sized_problem(DType dtype, Causal causal, bool with_mask) {
  Problem p = make_problem(dtype, {2, 2, 200, 333, 48, 40}, causal);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  for (std::vector<double>* t : {&p.q, &p.k, &p.v})
    for (double& x : *t) x = normal(rng);
  if (with_mask) {
    // A quarter of the pairs hidden, and every key of query 5 of head 1:
    // that row sees nothing and must come out zero.
    p.mask.resize(static_cast<std::size_t>(p.shape.mask_size()));
    std::bernoulli_distribution keep(0.75);
    for (uint8_t& m : p.mask) m = keep(rng) ? 1 : 0;
    for (int64_t j = 0; j < p.shape.kv_len; ++j) p.mask[p.mask_at(1, 5, j)] = 0;
  }
  round_tensors(p);
  return p;
}

TEST(OnlineParallel, MatchesOracleAndOneThread) {
  ASSERT_GT(compute_threads(), 0);
  auto online = make_builtin("online");
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (Causal causal : {Causal::none, Causal::top_left, Causal::bottom_right})
      for (bool with_mask : {false, true}) {
        SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " causal " << causal_name(causal)
                                        << (with_mask ? " masked" : ""));
        const Problem p = parallel_sized_problem(dtype, causal, with_mask);
        const Outcome parallel = online->run(p);
        ASSERT_EQ(parallel.status, CallStatus::ok) << parallel.message;
        const Comparison c = compare_to_oracle(p, oracle(p), parallel.out);
        EXPECT_TRUE(c.ok) << c.violations << " violations, worst ratio " << c.worst_ratio;
        EXPECT_GT(c.judged, 0);
        Outcome serial;
        {
          ScopedComputeThreads one(1);
          serial = online->run(p);
        }
        ASSERT_EQ(serial.status, CallStatus::ok) << serial.message;
        EXPECT_EQ(serial.out, parallel.out);  // no NaN here: == is bitwise agreement
      }
}

// Every build of online's loops this CPU can run (vector_isa.h: AVX-512,
// AVX2, baseline, each with its own instruction selection and FMA
// contraction) matches the oracle, forward and at a GQA group.
TEST(OnlineParallel, EveryVectorBuildMatchesOracle) {
  auto online = make_builtin("online");
  for (VectorIsa isa : {VectorIsa::baseline, VectorIsa::avx2, VectorIsa::avx512}) {
    if (isa > detected_vector_isa()) continue;
    ScopedVectorIsa cap(isa);
    ASSERT_EQ(vector_isa(), isa);
    for (DType dtype : {DType::f32, DType::f64, DType::bf16})
      for (bool with_mask : {false, true}) {
        SCOPED_TRACE(testing::Message() << vector_isa_name(isa) << " " << dtype_name(dtype)
                                        << (with_mask ? " masked" : ""));
        const Problem p = parallel_sized_problem(dtype, Causal::bottom_right, with_mask);
        const Outcome o = online->run(p);
        ASSERT_EQ(o.status, CallStatus::ok) << o.message;
        const Comparison c = compare_to_oracle(p, oracle(p), o.out);
        EXPECT_TRUE(c.ok) << c.violations << " violations, worst ratio " << c.worst_ratio;
        EXPECT_GT(c.judged, 0);
      }
  }
}

}  // namespace
}  // namespace attncheck
