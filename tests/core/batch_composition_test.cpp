// batch_composition_independence (issue #33, item 4b): a sequence alone
// agrees with its slice of a larger batch composed with other sequences. The
// implementations are the reference built-in behind a wrapper that refuses or
// computes what the test needs: a softmax max shared across the batch (a loud
// neighbour underflows a quiet sequence), lengths of sequence 0 applied to
// every sequence, a kernel that takes batch 1 only (insufficient, never pass
// or fail); and the zoo member batch_group_kv_stale, caught by this law and by
// no other law of the default catalogue.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "driver/law_run.h"
#include "gen/profiles.h"
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "law_framework/law.h"
#include "problem/dtype.h"

namespace attncheck {
namespace {

// The reference, except where `hook` answers for it; `declared` replaces its features.
class Wrapped final : public Implementation {
 public:
  std::function<std::optional<Outcome>(const Problem&)> hook;
  std::optional<FeatureBits> declared;

  std::string name() const override { return "wrapped"; }
  std::string source() const override { return "builtin:wrapped"; }
  FeatureBits features() const override { return declared ? *declared : inner_->features(); }
  Outcome run(const Problem& p) override {
    if (std::string why = undeclared_features(p, features()); !why.empty()) return {CallStatus::unsupported, {}, why};
    if (hook)
      if (std::optional<Outcome> o = hook(p)) return *o;
    return inner_->run(p);
  }
  Implementation& inner() { return *inner_; }

 private:
  std::unique_ptr<Implementation> inner_ = make_builtin("reference");
};

RunOptions options(uint64_t seed, int cases = 100) {
  RunOptions o;
  o.seed = seed;
  o.cases = cases;
  o.min_judged = 20;
  return o;
}

const Law& composition() {
  const Law* l = find_law("batch_composition_independence");
  EXPECT_NE(l, nullptr);
  return *l;
}

// Attention over the keys each row sees (no mask or causal rule: it declares
// no feature), computed in float as kernels compute f32, but with the softmax
// max taken over the whole batch for each (head, row): shift-invariance makes
// that exact arithmetic, until another sequence's logits exceed this one's by
// about 88 and exp(z - max) underflows to 0 (the row's output then 0 / 0).
Outcome batch_shared_max(const Problem& p) {
  const Shape& s = p.shape;
  const float scale = static_cast<float>(p.effective_scale());
  auto logit = [&](int64_t bh, int64_t i, int64_t j) {
    float dot = 0;
    for (int64_t d = 0; d < s.head_dim; ++d)
      dot += static_cast<float>(p.q[p.q_at(bh, i, d)]) * static_cast<float>(p.k[p.k_at(p.kv_of(bh), j, d)]);
    return scale * dot;
  };
  Outcome o;
  o.out.assign(s.out_size(), 0.0);
  for (int64_t h = 0; h < s.heads; ++h)
    for (int64_t i = 0; i < s.q_len; ++i) {
      float shared = -std::numeric_limits<float>::infinity();  // max over [batch][kv_len]
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t j = 0; j < s.kv_len; ++j) shared = std::max(shared, logit(b * s.heads + h, i, j));
      for (int64_t b = 0; b < s.batch; ++b) {
        const int64_t bh = b * s.heads + h;
        float sum = 0;
        std::vector<float> acc(static_cast<std::size_t>(s.value_dim), 0.0f);
        for (int64_t j = 0; j < s.kv_len; ++j) {
          const float w = std::exp(logit(bh, i, j) - shared);
          sum += w;
          for (int64_t c = 0; c < s.value_dim; ++c) acc[c] += w * static_cast<float>(p.v[p.v_at(p.kv_of(bh), j, c)]);
        }
        for (int64_t c = 0; c < s.value_dim; ++c) o.out[p.out_at(bh, i, c)] = round_to(p.dtype, acc[c] / sum);
      }
    }
  return o;
}

TEST(BatchComposition, LoudNeighbourCatchesAMaxSharedAcrossTheBatch) {
  Wrapped impl;
  impl.declared = 0;  // no mask, no causal rule: the kernel above ignores them
  impl.hook = [](const Problem& p) -> std::optional<Outcome> {
    if (p.dtype != DType::f32) return Outcome{CallStatus::unsupported, {}, "f32 only"};
    return batch_shared_max(p);
  };
  RunOptions o = options(20261206);
  o.gen.dtypes = {DType::f32};
  o.gen.families = kGaussian;  // quiet cases: only the law's own loud neighbour can expose the shared max
  const LawReport r = run_law(composition(), impl, o);
  ASSERT_EQ(r.status, LawStatus::fail) << r.message;
  EXPECT_NE(r.message.find("composed batch"), std::string::npos) << r.message;
  // On the cases as drawn (unit Gaussians) the shared max is exact arithmetic:
  // the oracle and the cut-apart batch see nothing.
  EXPECT_EQ(run_law(*find_law("matches_oracle"), impl, o).status, LawStatus::pass);
  EXPECT_EQ(run_law(*find_law("batch_head_independence"), impl, o).status, LawStatus::pass);
}

// Lengths (ABI v2): every sequence cut to sequence 0's kv length, as a kernel
// that sizes its key loop from kv_lens[0]: seen when a neighbour is shorter.
TEST(BatchComposition, ShorterNeighbourCatchesLengthsOfSequenceZero) {
  Wrapped impl;
  impl.declared = ATTNCHECK_FEATURE_LENGTHS;
  impl.hook = [&impl](const Problem& p) -> std::optional<Outcome> {
    if (p.kv_lens.empty()) return std::nullopt;
    Problem first = p;
    for (int32_t& n : first.kv_lens) n = p.kv_lens[0];
    return impl.inner().run(first);
  };
  const LawReport r = run_law(composition(), impl, options(20261207));
  ASSERT_EQ(r.status, LawStatus::fail) << r.message;
}

// A kernel that takes batch 1 only: the composed call is refused on every
// case, so the law judged nothing: insufficient, not a pass and not a failure.
TEST(BatchComposition, BatchOneOnlyIsInsufficient) {
  Wrapped impl;
  impl.hook = [](const Problem& p) -> std::optional<Outcome> {
    if (p.shape.batch > 1) return Outcome{CallStatus::unsupported, {}, "batch 1 only"};
    return std::nullopt;
  };
  const LawReport r = run_law(composition(), impl, options(20261208, 40));
  EXPECT_EQ(r.status, LawStatus::insufficient) << r.message;
  EXPECT_EQ(r.judged, 0);
}

// A kernel that takes at most 3 sequences is asked for the case's sequences
// and one loud neighbour instead, and earns a verdict.
TEST(BatchComposition, SmallBatchLimitStillJudges) {
  Wrapped impl;
  impl.hook = [](const Problem& p) -> std::optional<Outcome> {
    if (p.shape.batch > 4) return Outcome{CallStatus::unsupported, {}, "batch 4 at most"};
    return std::nullopt;
  };
  const LawReport r = run_law(composition(), impl, options(20261209, 60));
  EXPECT_EQ(r.status, LawStatus::pass) << r.message;
  EXPECT_GE(r.judged, 20);
}

// A scale so small (subnormal) that no value of the dtype makes a loud logit:
// the law composes without one instead of searching for it forever.
TEST(BatchComposition, TinyScaleEndsWithAVerdict) {
  Problem p = make_problem(DType::f64, {2, 1, 2, 3, 1, 1}, Causal::none, 1e-310);
  for (std::size_t n = 0; n < p.q.size(); ++n) p.q[n] = 1.0 + static_cast<double>(n);
  for (std::size_t n = 0; n < p.k.size(); ++n) p.k[n] = 0.5 * static_cast<double>(n);
  for (std::size_t n = 0; n < p.v.size(); ++n) p.v[n] = static_cast<double>(n % 3) - 1.0;
  auto impl = make_builtin("reference");
  EXPECT_EQ(check_case(composition(), *impl, p).status, VerdictStatus::pass);
}

// The zoo member pinned to this law: right on every case with at most 4
// sequences, so every other law of the default catalogue passes it, as
// `attncheck check` runs them (the default profile, every dtype).
TEST(BatchComposition, OnlyThisLawCatchesBatchGroupKvStale) {
  for (uint64_t seed : {20261130ull, 7ull}) {
    RunOptions o = options(seed);
    o.gen = find_profile("default")->options();
    o.gen.dtypes = every_dtype();
    for (const Law& law : all_laws()) {
      if (!law.in_default_catalogue || law.is_process_law()) continue;
      auto impl = make_builtin("batch_group_kv_stale");
      ASSERT_NE(impl, nullptr);
      const LawReport r = run_law(law, *impl, o);
      if (law.name == "batch_composition_independence")
        EXPECT_EQ(r.status, LawStatus::fail) << "seed " << seed << ": " << r.message;
      else
        EXPECT_NE(r.status, LawStatus::fail) << law.name << " catches it too at seed " << seed << ": " << r.message;
    }
  }
}

}  // namespace
}  // namespace attncheck
