// Validates the oracle's error bound (docs/tolerance.md) and prints the figures:
//  (a) the correct built-ins never exceed the bound over N random cases
//      (every dtype, every value family), on long rows of kv_len 4096 (f32,
//      f64), and on decode-shaped rows (q_len 1..8, kv_len 4096..16384,
//      head_dim and value_dim up to 256, every dtype);
//  (b) an output off by a relative 1e-6 is flagged in f64 (random and decode cases);
//  (c) the typical (median) and worst ratio error/bound per built-in and dtype;
//  (d) a faulty implementation that accumulates in the 16-bit format itself
//      (`acc16`, below) is flagged on long f16/bf16 decode rows;
//  (v2) with --v2 N: N random ABI v2 cases from sample_problem allowed every
//      feature (GQA, view layouts, lengths with NaN or huge padding, windows,
//      soft-cap, bias, ALiBi, sinks, lse, broadcast masks: src/gen/feature_draws.h),
//      every dtype and value family: (a) to (c) for out and lse, over the
//      built-ins that declare the case's features (all three declare every
//      feature) and three straightforward implementations in the dtype
//      (tests/support/plain_v2_attention.h: two-pass, eager 16-bit, streaming).
//  (v3) with --v3 N: N random cases from sample_problem allowed every feature the
//      built-ins declare, version 3's included (packed and paged keys, every stored
//      K/V format for K and for V with every scale granularity, per-batch ALiBi, V
//      as a view of K, broadcast K/V): (a) and (c) for out and lse over the three
//      built-ins, tallied by the case's first version-3 feature (formats, paged,
//      packed, alibi_batch, v_view, broadcast, or none drawn); three cases in four
//      require formats, paged keys or packed sequences in turn.
//  (typical) with --typical N: N Gaussian cases per dtype (f32, f16, bf16) drawn as the
//      accuracy law draws them (head_dim 64 and up, 16 keys and up, every v2 feature the
//      model covers), each run by the three built-ins: every graded element's error
//      divided by the typical-error model's standard deviation (oracle/typical_error.h;
//      for f16 and bf16 the careful kernel storing in 16 bits, as the law judges), pooled:
//      their root-mean-square and how often |ratio| exceeds 1 to 4, beside a Gaussian's.
//  (grad) with --grad N: N random backward problems from sample_problem
//      (GenOptions::required has kBackwardFeature, every feature and value
//      family, every dtype), and --long-rows N more of 4,096 keys per row (or
//      4,096 rows per key) in f32/f64: the gradients of every built-in with a
//      backward and of the straightforward backward in the compute type
//      (tests/support/plain_v2_backward.h, D from O and from P, eager 16-bit) against the
//      gradient bound (src/oracle/grad_oracle.h); f64 gradients off by a
//      relative 1e-6 flagged.
//
// Usage: build/bench/validate_bound [--cases N] [--long-rows N] [--decode N] [--v2 N] [--v3 N] [--typical N]
//                                   [--grad N] [--seed S]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "impls/in_process.h"
#include "impls/typed_call.h"
#include "oracle/grad_oracle.h"
#include "oracle/oracle.h"
#include "oracle/typical_error.h"
#include "gen/generators.h"
#include "law_framework/law.h"
#include "plain_v2_attention.h"
#include "plain_v2_backward.h"
#include "sixteen_bit_attention.h"

using namespace attncheck;

namespace {

// `acc16`: a FlashAttention-2 style streaming softmax (tiles of 32 keys)
// whose P.V accumulator is rounded to the 16-bit format after every addition,
// as a matrix unit with a 16-bit accumulator computes it
// (tests/support/sixteen_bit_attention.h, shared with the bound's tests).
constexpr auto acc16_forward = testing::flash_forward<false, true>;

struct Tally {
  std::vector<double> ratios;  // worst error/bound of each case (elements with a finite, positive bound)
  long violations = 0;
};

// Worst ratio over elements; 0 when every element is exact.
double worst_ratio(const Problem& p, const OracleResult& o, const std::vector<double>& out) {
  return compare_to_oracle(p, o, out).worst_ratio;
}

void record(std::map<std::string, Tally>& tallies, const std::string& key, double ratio) {
  Tally& t = tallies[key];
  t.ratios.push_back(ratio);
  if (ratio > 1) ++t.violations;
}

// Many cases come out exact (zeros, small integers, one key): the median is
// taken over the cases with a nonzero error, which is what "typical" means here.
void print(const std::map<std::string, Tally>& tallies) {
  std::printf("%-22s %8s %8s %11s %11s %11s %10s\n", "implementation/dtype", "cases", "inexact", "median", "p99",
              "worst", "violations");
  for (auto [key, t] : tallies) {
    std::vector<double> r;
    for (double x : t.ratios)
      if (x > 0) r.push_back(x);
    std::sort(r.begin(), r.end());
    const auto at = [&](double q) { return r.empty() ? 0.0 : r[std::min(r.size() - 1, size_t(q * r.size()))]; };
    std::printf("%-22s %8zu %8zu %11.3g %11.3g %11.3g %10ld\n", key.c_str(), t.ratios.size(), r.size(), at(0.5),
                at(0.99), r.empty() ? 0.0 : r.back(), t.violations);
  }
}

// (b): the exact f64 output off by a relative 1e-6. Detectable only where the
// output is not a cancellation far below the size of its terms: |out| 1e-6
// must exceed what rounding the terms may cost. Counts those cases, and the
// others apart.
struct OffsetTally {
  long flagged = 0, detectable = 0, cancelling = 0;
  void add(const Problem& p, const OracleResult& o) {
    std::vector<double> off = o.exact;
    bool any = false, can = false;
    for (size_t k = 0; k < off.size(); ++k)
      if (off[k] != 0 && std::isfinite(o.bound[k])) {
        can |= std::abs(off[k]) * 1e-6 > o.bound[k];
        off[k] *= 1 + 1e-6;
        any = true;
      }
    if (any && can) { ++detectable; flagged += !compare_to_oracle(p, o, off).ok; }
    else if (any) ++cancelling;
  }
};

// The lse of f64 and f32 problems off by a relative 1e-6 (lse is a float output
// in every dtype), counted as OffsetTally does.
struct LseOffsetTally {
  long flagged = 0, detectable = 0;
  void add(const Problem& p, const OracleResult& o) {
    std::vector<double> off = o.lse_exact;
    bool can = false;
    for (size_t r = 0; r < off.size(); ++r)
      if (std::isfinite(o.lse_bound[r]) && std::isfinite(off[r]) && off[r] != 0) {
        can |= std::abs(off[r]) * 1e-6 > o.lse_bound[r];
        off[r] *= 1 + 1e-6;
      }
    if (can) { ++detectable; flagged += !compare_lse_to_oracle(p, o, off).ok; }
  }
};

// The straightforward v2 implementations of tests/support/plain_v2_attention.h, by name.
std::vector<std::pair<std::string, testing::PlainResult>> plain_v2_runs(const Problem& p) {
  std::vector<std::pair<std::string, testing::PlainResult>> r;
  if (p.dtype == DType::f64) {
    r.emplace_back("plain-two-pass", testing::plain_two_pass<double>(p, false));
    r.emplace_back("plain-streaming", testing::plain_streaming<double>(p));
  } else {
    r.emplace_back("plain-two-pass", testing::plain_two_pass<float>(p, false));
    r.emplace_back("plain-streaming", testing::plain_streaming<float>(p));
    if (p.dtype != DType::f32) r.emplace_back("plain-eager16", testing::plain_two_pass<float>(p, true));
  }
  return r;
}

// (grad b): f64 gradients off by a relative 1e-6, counted as OffsetTally does;
// problems whose call passes an lse apart (an f64 backward may normalise with
// that float: docs/tolerance.md, "Gradients").
struct GradOffsetTally {
  long flagged = 0, detectable = 0, cancelling = 0;
  void add(const Problem& p, const GradOracleResult& g) {
    Outcome off;
    off.dq = g.dq, off.dk = g.dk, off.dv = g.dv;
    bool any = false, can = false;
    auto scale = [&](std::vector<double>& x, const std::vector<double>& b) {
      for (size_t k = 0; k < x.size(); ++k)
        if (x[k] != 0 && std::isfinite(b[k])) {
          can |= std::abs(x[k]) * 1e-6 > b[k];
          x[k] *= 1 + 1e-6;
          any = true;
        }
    };
    scale(off.dq, g.dq_bound);
    scale(off.dk, g.dk_bound);
    scale(off.dv, g.dv_bound);
    if (any && can) { ++detectable; flagged += !compare_grads_to_oracle(p, g, off).ok(); }
    else if (any) ++cancelling;
  }
};

// dout for a backward problem the generators left without one (before they
// drew it): Gaussian in the dtype on existing rows, NaN on padding rows.
void ensure_dout(Problem& p, uint64_t seed) {
  if (p.is_backward()) return;
  std::mt19937_64 rng(seed ^ 0x5bd1e995u);
  std::normal_distribution<double> n(0, 1);
  p.dout.assign(p.shape.out_size(), 0.0);
  for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
    for (int64_t i = 0; i < p.shape.q_len; ++i)
      for (int64_t c = 0; c < p.shape.value_dim; ++c)
        p.dout[p.out_at(bh, i, c)] = p.row_exists(bh, i) ? round_to(p.dtype, n(rng)) : NAN;
}

// The worst ratio error/bound over dq, dk and dv; the first violations are
// printed to stderr with their case (what a new violation needs to be looked at).
double grad_worst_ratio(long case_number, const std::string& who, const Problem& p, const GradOracleResult& g,
                        const std::vector<double>& dq, const std::vector<double>& dk, const std::vector<double>& dv) {
  Outcome o;
  o.dq = dq, o.dk = dk, o.dv = dv;
  const GradComparison c = compare_grads_to_oracle(p, g, o);
  static int shown = 0;
  if (!c.ok() && shown < 12) {
    ++shown;
    std::fprintf(stderr, "violation (case %ld): %s on %s: %s\n", case_number, who.c_str(), p.header().c_str(), c.message().c_str());
  }
  return std::max({c.dq.worst_ratio, c.dk.worst_ratio, c.dv.worst_ratio});
}

int usage(const char* argv0, int rc) {
  std::fprintf(rc ? stderr : stdout,
               "usage: %s [--cases N] [--long-rows N] [--decode N] [--v2 N] [--seed S]\n"
               "  --cases N      random cases, every dtype and value family (default 100000)\n"
               "  --long-rows N  f32/f64 rows of kv_len 4096 (default 200)\n"
               "  --decode N     decode-shaped cases: q_len 1..8, kv_len 4096..16384, head_dim and value_dim\n"
               "                 up to 256, every dtype; and (N+3)/4 long f16/bf16 rows for the faulty acc16 (default 0)\n"
               "  --v2 N         random ABI v2 cases, every feature, dtype and value family (default 0)\n"
               "  --v3 N         random cases with version 3's features too (paged, packed, stored formats, ...)\n"
               "  --typical N    Gaussian cases per dtype: the built-ins' errors against the typical-error model\n"
               "  --grad N       random backward problems, every feature, dtype and value family, and --long-rows\n"
               "                 long f32/f64 backward rows (default 0)\n"
               "  --seed S       (default 20261130)\n"
               "Exit 0 when no correct built-in exceeds its bound, every detectable 1e-6 f64 fault is\n"
               "flagged and acc16 is flagged on every decode case where its fault shows.\n",
               argv0);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  long cases = 100000, long_rows = 200, decode = 0, v2 = 0, v3 = 0, typical = 0, grad = 0;
  uint64_t seed = 20261130;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return usage(argv[0], 0);
    if (i + 1 >= argc) return usage(argv[0], 2);
    if (!std::strcmp(argv[i], "--cases")) cases = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--long-rows")) long_rows = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--decode")) decode = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--v2")) v2 = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--v3")) v3 = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--typical")) typical = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--grad")) grad = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[++i], nullptr, 10);
    else return usage(argv[0], 2);
  }
  const auto start = std::chrono::steady_clock::now();
  const char* names[] = {"reference", "naive", "online"};
  std::vector<std::unique_ptr<Implementation>> impls;
  for (const char* n : names) impls.push_back(make_builtin(n));

  GenOptions g;
  g.dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  std::map<std::string, Tally> tallies;
  OffsetTally offset, decode_offset;
  for (long c = 0; c < cases; ++c) {
    const Problem p = sample_problem(g, seed + c, static_cast<int>(c % 101));
    const OracleResult o = oracle(p);
    for (auto& impl : impls) {
      const Outcome out = impl->run(p);
      if (out.status != CallStatus::ok) { std::fprintf(stderr, "%s: %s\n", impl->name().c_str(), out.message.c_str()); return 1; }
      record(tallies, impl->name() + "/" + std::string(dtype_name(p.dtype)), worst_ratio(p, o, out.out));
    }
    if (p.dtype == DType::f64) offset.add(p, o);
  }
  // Long rows: kv_len 4096 accumulated in plain float (and double).
  GenOptions lg;
  lg.dtypes = {DType::f32, DType::f64};
  lg.mask = false;
  lg.max_batch = lg.max_heads = 1;
  lg.min_kv_len = lg.max_kv_len = 4096;
  lg.max_q_len = 2;
  lg.max_head_dim = lg.max_value_dim = 64;
  lg.families = kGaussian | kSmallInts;
  for (long c = 0; c < long_rows; ++c) {
    const Problem p = sample_problem(lg, seed * 7 + c, 100);
    const OracleResult o = oracle(p);
    for (auto& impl : impls) {
      const Outcome out = impl->run(p);
      record(tallies, impl->name() + "/" + std::string(dtype_name(p.dtype)) + "/4096", worst_ratio(p, o, out.out));
    }
  }
  // Decode rows: a few queries against a long cache, every dtype, wide heads.
  // Gaussian and small-integer values (ordinary rows, where 16-bit accumulation
  // is what goes wrong) and huge logits (near one-hot rows whose small weights
  // sit below the 16-bit formats' smallest normal).
  GenOptions dg;
  dg.dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  dg.max_batch = dg.max_heads = 1;
  dg.max_q_len = 8;
  dg.min_kv_len = 4096;
  dg.max_kv_len = 16384;
  dg.max_head_dim = dg.max_value_dim = 256;
  dg.families = kGaussian | kSmallInts | kHugeLogits;
  InProcessImplementation acc16("acc16", acc16_forward);
  std::map<std::string, long> acc16_flagged, acc16_cases;
  std::map<std::string, double> acc16_least;  // the smallest worst ratio among flagged cases
  for (long c = 0; c < decode; ++c) {
    const Problem p = sample_problem(dg, seed * 13 + c, 100);
    const OracleResult o = oracle(p);
    const std::string dt(dtype_name(p.dtype));
    for (auto& impl : impls) {
      const Outcome out = impl->run(p);
      if (out.status != CallStatus::ok) { std::fprintf(stderr, "%s: %s\n", impl->name().c_str(), out.message.c_str()); return 1; }
      record(tallies, impl->name() + "/" + dt + "/decode", worst_ratio(p, o, out.out));
    }
    if (p.dtype == DType::f64) decode_offset.add(p, o);
  }
  // (d) acc16 on long 16-bit rows where accumulating in 16 bits must show: no
  // mask or causal rule (every key seen), Gaussian q and k at the default
  // scale (no near one-hot rows, where nothing is accumulated), values N(2, 1)
  // (outputs near 2, so an error in the sum is not hidden under a cancelling
  // numerator's allowance gamma(2n + 1) sum_j p_j |v_j|). One for every four
  // decode cases.
  GenOptions ag = dg;
  ag.dtypes = {DType::f16, DType::bf16};
  ag.mask = ag.causal = false;
  ag.explicit_scale = false;  // default 1/sqrt(D): logits of unit size, every key counts
  ag.families = kGaussian;
  for (long c = 0; c < (decode + 3) / 4; ++c) {
    Problem p = sample_problem(ag, seed * 17 + c, 100);
    for (double& x : p.v) x = round_to(p.dtype, x + 2);
    const OracleResult o = oracle(p);
    const std::string dt(dtype_name(p.dtype));
    const Outcome out = acc16.run(p);
    ++acc16_cases[dt];
    const Comparison cmp = compare_to_oracle(p, o, out.out);
    if (out.status == CallStatus::ok && !cmp.ok) {
      ++acc16_flagged[dt];
      acc16_least[dt] = std::min(acc16_least.count(dt) ? acc16_least[dt] : INFINITY, cmp.worst_ratio);
    }
  }
  // v2: the random cases' shapes, every feature and every value family; the
  // built-ins that declare the case's features, and the plain implementations.
  GenOptions vg = g;
  vg.features = kAllFeatures;
  vg.families = kAllFamilies;
  std::map<std::string, Tally> v2_tallies;
  std::map<FeatureBits, long> v2_feature_cases;  // how many cases use each feature
  OffsetTally v2_offset;
  LseOffsetTally v2_lse_offset;
  long v2_unclaimed = 0;  // cases no built-in declares the features of
  for (long c = 0; c < v2; ++c) {
    const Problem p = sample_problem(vg, seed * 19 + c, static_cast<int>(c % 101));
    for (FeatureBits f = 1; f <= kAllFeatures; f <<= 1) v2_feature_cases[f] += (p.features() & f) != 0;
    const OracleResult o = oracle(p);
    const std::string dt(dtype_name(p.dtype));
    const auto judge = [&](const std::string& name, const std::vector<double>& out, const std::vector<double>& lse) {
      record(v2_tallies, name + "/" + dt, worst_ratio(p, o, out));
      if (!lse.empty()) record(v2_tallies, name + "/" + dt + "/lse", compare_lse_to_oracle(p, o, lse).worst_ratio);
    };
    bool claimed = false;
    for (auto& impl : impls) {
      if ((p.features() & ~impl->features()) != 0) continue;
      claimed = true;
      const Outcome out = impl->run(p);
      if (out.status != CallStatus::ok) { std::fprintf(stderr, "%s: %s\n", impl->name().c_str(), out.message.c_str()); return 1; }
      judge(impl->name(), out.out, p.lse_requested ? out.lse : std::vector<double>{});
    }
    v2_unclaimed += !claimed;
    for (const auto& [name, r] : plain_v2_runs(p)) judge(name, r.out, r.lse);
    if (p.dtype == DType::f64) v2_offset.add(p, o);
    if (p.dtype == DType::f64 || p.dtype == DType::f32) v2_lse_offset.add(p, o);
  }
  // Gradients: random backward problems (every feature, family, dtype), then
  // long f32/f64 rows: 4,096 keys per row (dq's sums) or 4,096 rows per key
  // (dk's and dv's), accumulated in plain float and double.
  std::map<std::string, Tally> grad_tallies;
  GradOffsetTally grad_offset, grad_offset_lse;
  long grad_builtin_runs = 0;
  const long grad_long = grad > 0 ? long_rows : 0;
  for (long c = 0; c < grad + grad_long; ++c) {
    const bool long_case = c >= grad;
    GenOptions gg = g;
    gg.features = kAllFeatures | kBackwardFeature;
    gg.required = kBackwardFeature;
    gg.families = kAllFamilies;
    if (long_case) {
      gg.dtypes = {DType::f32, DType::f64};
      gg.max_batch = gg.max_heads = 2;
      gg.max_head_dim = gg.max_value_dim = 64;
      gg.families = kGaussian | kSmallInts;
      gg.mask = false;
      const bool many_keys = c % 2 == 0;
      gg.min_kv_len = gg.max_kv_len = many_keys ? 4096 : 8;
      gg.min_q_len = gg.max_q_len = many_keys ? 2 : 4096;
    }
    Problem p = sample_problem(gg, seed * 23 + c, long_case ? 100 : static_cast<int>(c % 101));
    // ATTNCHECK_GRAD_CASE=N: case N alone, described in full (to look at a violation).
    const char* only = std::getenv("ATTNCHECK_GRAD_CASE");
    if (only && std::atol(only) != c) continue;
    if (only) std::fprintf(stderr, "%s\n", p.describe(100000).c_str());
    ensure_dout(p, seed * 23 + c);
    const GradOracleResult go = grad_oracle(p);
    const std::string key = std::string(dtype_name(p.dtype)) + (long_case ? "/4096" : "");
    for (auto& impl : impls) {
      if ((p.features() & ~impl->features()) != 0) continue;  // no backward (yet), or a feature it lacks
      const Outcome out = impl->run(p);
      if (out.status != CallStatus::ok) { std::fprintf(stderr, "%s: %s\n", impl->name().c_str(), out.message.c_str()); return 1; }
      ++grad_builtin_runs;
      record(grad_tallies, impl->name() + "/" + key + (p.lse_requested ? "/lse" : ""),
             grad_worst_ratio(c, impl->name(), p, go, out.dq, out.dk, out.dv));
    }
    for (int variant = 0; variant < 4; ++variant) {
      const bool via_p = variant % 2 == 1, eager16 = variant >= 2;
      if (eager16 && compute_dtype(p.dtype) == p.dtype) continue;
      const testing::PlainGrads x = compute_dtype(p.dtype) == DType::f64
                                        ? testing::plain_backward<double>(p, via_p)
                                        : testing::plain_backward<float>(p, via_p, eager16);
      const char* name = variant == 0 ? "plain-bwd-o/" : variant == 1 ? "plain-bwd-p/" : variant == 2 ? "plain-eager16-o/" : "plain-eager16-p/";
      record(grad_tallies, std::string(name) + key + (p.lse_requested ? "/lse" : ""), grad_worst_ratio(c, name, p, go, x.dq, x.dk, x.dv));
    }
    if (p.dtype == DType::f64) (p.lse_requested ? grad_offset_lse : grad_offset).add(p, go);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("bound validation: %ld random cases (seed %llu), %ld rows of kv_len 4096, %ld decode cases"
              " (q_len 1..8, kv_len 4096..16384, head_dim/value_dim up to 256); %.0f s\n",
              cases, static_cast<unsigned long long>(seed), long_rows, decode, seconds);
  print(tallies);
  std::printf("(b) f64 outputs off by a relative 1e-6: flagged in %ld of %ld cases; in %ld more cases the bound"
              " itself exceeds 1e-6 of every output (ill-conditioned rows: outputs that cancel far below their terms, or"
              " logits so large that rounding them may legitimately move the weights)\n",
              offset.flagged, offset.detectable, offset.cancelling);
  if (decode > 0)
    std::printf("(b) on decode rows: flagged in %ld of %ld f64 cases (%ld more ill-conditioned)\n", decode_offset.flagged,
                decode_offset.detectable, decode_offset.cancelling);
  if (v2 > 0) {
    std::printf("v2: %ld random ABI v2 cases (sample_problem, every feature allowed, every value family; %ld of"
                " them declared by no built-in); cases using each feature:",
                v2, v2_unclaimed);
    for (const auto& [f, n] : v2_feature_cases) std::printf(" %s %ld", std::string(feature_name(f)).c_str(), n);
    std::printf("\n");
    print(v2_tallies);
    std::printf("(b) v2 f64 outputs off by a relative 1e-6: flagged in %ld of %ld cases (%ld more ill-conditioned)\n",
                v2_offset.flagged, v2_offset.detectable, v2_offset.cancelling);
    std::printf("(b) v2 f32/f64 lse off by a relative 1e-6: flagged in %ld of %ld cases\n", v2_lse_offset.flagged,
                v2_lse_offset.detectable);
  }
  // v3: version 3's features too, over the built-ins (the plain implementations
  // of tests/support take version 2's calls only).
  GenOptions v3g = vg;
  v3g.features = impls.front()->features();
  v3g.kv_formats = impls.front()->kv_formats();
  std::map<std::string, Tally> v3_tallies;
  std::map<std::string, long> v3_kind_cases;
  const auto v3_kind = [](const Problem& p) -> std::string {
    if (p.kv_formatted()) return "formats";
    if (p.paged()) return "paged";
    if (p.packed()) return "packed";
    const FeatureBits f = p.features();
    if (f & kAlibiBatchFeature) return "alibi_batch";
    if (f & kVViewFeature) return "v_view";
    if (f & kBroadcastKvFeature) return "broadcast";
    return "v2";
  };
  // Three cases in four require one version-3 feature in turn (stored formats,
  // paged keys, packed sequences), so that each is drawn often; the fourth is free.
  const FeatureBits v3_turns[4] = {kKvFormatsFeature, kPagedFeature, kPackedFeature, 0};
  for (long c = 0; c < v3; ++c) {
    GenOptions turn = v3g;
    turn.required |= v3_turns[c % 4];
    const Problem p = sample_problem(turn, seed * 23 + c, static_cast<int>(c % 101));
    const std::string kind = v3_kind(p);
    ++v3_kind_cases[kind];
    const OracleResult o = oracle(p);
    const std::string key = std::string(dtype_name(p.dtype)) + " " + kind;
    for (auto& impl : impls) {
      if ((p.features() & ~impl->features()) != 0) continue;
      const Outcome out = impl->run(p);
      if (out.status != CallStatus::ok) {
        std::fprintf(stderr, "%s on a v3 case (%s): %s\n", impl->name().c_str(), kind.c_str(), out.message.c_str());
        return 1;
      }
      record(v3_tallies, impl->name() + "/" + key, worst_ratio(p, o, out.out));
      if (p.lse_requested)
        record(v3_tallies, impl->name() + "/" + key + "/lse", compare_lse_to_oracle(p, o, out.lse).worst_ratio);
    }
  }
  if (v3 > 0) {
    std::printf("v3: %ld random cases with version 3's features (sample_problem, every feature the built-ins declare, "
                "every stored format and value family); by first v3 feature:", v3);
    for (const auto& [kind, n] : v3_kind_cases) std::printf(" %s %ld", kind.c_str(), n);
    std::printf("\n");
    print(v3_tallies);
  }
  // typical: the model's calibration on the built-ins (the accuracy law's draws).
  for (const DType dt : {DType::f32, DType::f16, DType::bf16}) {
    if (typical <= 0) break;
    // The law's own draws (its features and tailor), in this one dtype.
    static const Law* const law = find_law("accuracy_within_typical");
    GenOptions tg;
    tg.dtypes = {dt};
    tg.features = law->features;
    law->tailor(tg);
    double sum2 = 0;
    long n = 0, graded_cases = 0, beyond[4] = {0, 0, 0, 0};
    for (long c = 0; c < typical; ++c) {
      const Problem p = sample_problem(tg, seed * 29 + c, static_cast<int>(c % 101));
      if (!typical_error_model_excludes(p).empty()) continue;
      const OracleResult o = oracle(p);
      const std::vector<double> t = typical_error(p, o, dt != DType::f32);
      bool graded = false;
      for (auto& impl : impls) {
        const Outcome out = impl->run(p);
        if (out.status != CallStatus::ok) continue;
        for (std::size_t e = 0; e < t.size(); ++e) {
          if (!(std::isfinite(t[e]) && t[e] > 0)) continue;
          const double r = (out.out[e] - o.exact[e]) / t[e];
          sum2 += r * r;
          ++n;
          for (int k = 0; k < 4; ++k) beyond[k] += std::abs(r) > k + 1;
          graded = true;
        }
      }
      graded_cases += graded;
    }
    std::printf("(typical) %s: %ld of %ld Gaussian cases graded, %ld element errors of the three built-ins over the "
                "model's standard deviation: rms %.3f; |ratio| > 1, 2, 3, 4: %.4f %.4f %.5f %.6f (a Gaussian's: 0.3173 "
                "0.0455 0.00270 0.000063)\n",
                std::string(dtype_name(dt)).c_str(), graded_cases, typical, n, n ? std::sqrt(sum2 / n) : 0.0,
                n ? double(beyond[0]) / n : 0.0, n ? double(beyond[1]) / n : 0.0, n ? double(beyond[2]) / n : 0.0,
                n ? double(beyond[3]) / n : 0.0);
  }
  if (grad > 0) {
    std::printf("grad: %ld random backward problems (sample_problem, every feature and value family, every dtype) and"
                " %ld long f32/f64 ones (4,096 keys per row or 4,096 rows per key); %ld built-in backward runs\n",
                grad, grad_long, grad_builtin_runs);
    print(grad_tallies);
    std::printf("(grad b) f64 gradients off by a relative 1e-6: flagged in %ld of %ld cases (%ld more ill-conditioned);"
                " with an lse passed (a float the backward may normalise with): %ld of %ld (%ld more)\n",
                grad_offset.flagged, grad_offset.detectable, grad_offset.cancelling, grad_offset_lse.flagged,
                grad_offset_lse.detectable, grad_offset_lse.cancelling);
  }
  for (auto& [k, t] : v2_tallies) tallies[k + " (v2)"] = t;
  for (auto& [k, t] : v3_tallies) tallies[k + " (v3)"] = t;
  for (auto& [k, t] : grad_tallies) tallies[k + " (grad)"] = t;
  bool acc16_ok = true;
  for (const auto& [dt, n] : acc16_cases) {
    std::printf("(d) acc16 (accumulating in %s) flagged in %ld of %ld long %s rows (the least flagged at %.3gx the bound)\n",
                dt.c_str(), acc16_flagged[dt], n, dt.c_str(), acc16_least[dt]);
    acc16_ok &= acc16_flagged[dt] == n;
  }
  long total_violations = 0;
  for (auto& [k, t] : tallies) total_violations += t.violations;
  return total_violations == 0 && offset.flagged == offset.detectable && decode_offset.flagged == decode_offset.detectable &&
                 v2_offset.flagged == v2_offset.detectable && v2_lse_offset.flagged == v2_lse_offset.detectable && acc16_ok &&
                 grad_offset.flagged == grad_offset.detectable && grad_offset_lse.flagged == grad_offset_lse.detectable
             ? 0
             : 1;
}
