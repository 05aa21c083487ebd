// What the problem generators may draw: shape ranges, features and value
// families. Plain data, free of any test framework, so that laws (which narrow
// it through Law::tailor), the CLI and the fuzzers can all speak it.
#pragma once

#include <cstdint>
#include <vector>

#include "problem/dtype.h"
#include "problem/problem.h"

namespace attncheck {

// Families of tensor values. A problem draws one family per tensor.
enum ValueFamily : unsigned {
  kGaussian = 1u << 0,     // unit-variance normal, rounded to the dtype
  kSmallInts = 1u << 1,    // -3..3: ties and exact sums
  kWide = 1u << 2,         // log-uniform magnitudes over the dtype's whole range
  kEdge = 1u << 3,         // ±0, subnormals, smallest/largest normals, ±1, mixed with Gaussians
  kHugeLogits = 1u << 4,   // Gaussians scaled so logits are hundreds to thousands apart
  kClassicFamilies = 0x1Fu,  // the five above: the `small` profile and GenOptions' default
  // Values as trained models produce them:
  kModelLogits = 1u << 5,    // Gaussians scaled so logits reach 30 to 50 in magnitude
  kOutlierChannels = 1u << 6,  // Gaussians with a few channels 20 to 100 times larger
  kPositive = 1u << 7,       // all positive, or one constant: accumulators that only grow
  kNearEqual = 1u << 8,      // 1 + 1e-3 noise: long rows of near-equal logits
  kAllFamilies = 0x1FFu,
  // Values from the public bug reports (docs/shapes.md, "Shapes and inputs
  // from the bug reports"), which every profile draws now and then; each names
  // the fault class it is for (value_draws.cpp, generators.cpp):
  kScaledUp = 1u << 11,            // another family's values scaled 3 to 10 times
  kSparseInts = 1u << 12,          // mostly zeros, a few integers in -4..4: exact in every dtype
  kActivationOutliers = 1u << 13,  // a few tokens with a few channels 100 to 1000 times larger
  kNegativeLse = 1u << 14,         // (a problem's, not a tensor's) every visible logit far below -88.7, with a mask
  kReportFamilies = kScaledUp | kSparseInts | kActivationOutliers | kNegativeLse,
  // Values beyond the generators' defaults, which no profile draws (the fuzz
  // targets do, fuzz/fuzz_problems.h):
  kSpecials = 1u << 9,   // per element: ±0, subnormals, largest subnormal, ±1, 2, 1 + ulp, max,
                         // sqrt(max), 64, 1000, ±inf, NaN; small k/8; or a raw bit pattern
  kRawBits = 1u << 10,   // every element a raw bit pattern of the dtype: every value, inf and NaN too
  // Not a family: q, k, v, dout, the scale and the padding are finite (±inf
  // and NaN fold to ±max), for the laws that need finite inputs.
  kFiniteOnly = 1u << 15,
};

// Head dims that fixed-size kernels are specialised for.
inline constexpr int64_t kKernelHeadDims[] = {32, 64, 80, 96, 128, 160, 192, 256};

// One region of shape space a profile draws from (decode, prefill, ...). Its
// ranges are intersected with the options' own min_/max_ fields, which laws
// (Law::tailor) and the command line (--q-len, ...) narrow.
struct ShapeDomain {
  const char* name = "small";
  double weight = 1;            // relative frequency among the options' domains
  int64_t max_batch = 3, max_heads = 3;
  int64_t min_q_len = 1, max_q_len = 72;
  int64_t min_kv_len = 1, max_kv_len = 72;
  bool q_equals_kv = false;     // prefill: q_len == kv_len
  bool q_below_kv = false;      // chunked prefill: q_len < kv_len, bottom_right causal mostly
  // Lengths grow with RapidCheck's size ramp (small first); false: the whole
  // range from the first case (long rows must not wait for the end of a run).
  bool ramped = true;
  // May draw a dense mask [batch][heads][q_len][kv_len]; off where that would be
  // huge (prefill): causal rules and per-row structure cover those shapes.
  bool masks = true;
  // Lengths drawn log-uniformly (else uniformly) between the tile boundaries
  // and the near-minimum ones: the long rows' domains, where a uniform draw
  // would make nearly every case as costly as the longest.
  bool log_lengths = false;
  // Caps head_dim and value_dim in this domain (0: the options' caps alone):
  // long rows are paid for by few elements a key. A probe's head_dims list wins
  // (and the work cap, GenOptions::max_case_work, then shortens the rows).
  int64_t max_dim = 0;
  // The value families this domain draws, intersected with the options' (0:
  // the options' alone; an empty intersection: the options').
  unsigned families = 0;
  // [from_size, to_size): the domain is drawn at these sizes of the ramp
  // (with probability size_chance at each; else a domain by weight) and at no
  // other (its weight unused); 0, 0: by weight at every size. RapidCheck's
  // sizes go 0..100 over a law's cases, so a band is a fixed share of every
  // law's run rather than a chance that a short run misses. A case drawn at
  // size 100 (fuzzers, sample_problem's default) or past it (after discards)
  // is never in such a domain.
  int from_size = 0, to_size = 0;
  double size_chance = 1;
};

// Every member of ShapeDomain and GenOptions is listed in
// gen/gen_options_fields.h (the sample memo's key is derived from it): a
// member added here and not there does not compile.
struct GenOptions {
  std::vector<DType> dtypes{DType::f32, DType::f64};
  int64_t min_batch = 1, max_batch = 3, min_heads = 1, max_heads = 3;
  // Lengths reach past the tile sizes implementations use (powers of two and
  // one past them, up to 129 in long runs); the RapidCheck size scales them.
  int64_t min_q_len = 1, max_q_len = 72;
  int64_t min_kv_len = 1, max_kv_len = 72;
  int64_t min_head_dim = 1, max_head_dim = 72;
  int64_t max_value_dim = 72;
  bool same_dims = false;       // value_dim == head_dim always
  bool causal = true;           // may draw a causal rule (and `features` has CAUSAL)
  bool mask = true;             // may draw a mask (and `features` has MASK)
  // The ABI v2 features (ATTNCHECK_FEATURE_*) a problem may use: what the
  // implementation under test declares. kV1Features draws exactly the
  // problems of ABI v1, from the same seeds as always. Any bit beyond them
  // also lets masks be broadcast over batch, heads or rows (gen/feature_draws.h).
  FeatureBits features = kV1Features;
  // Features (within `features`) every drawn problem uses, as far as its
  // shape allows (GQA needs two heads): a law about one feature asks for it
  // here rather than discarding the problems that lack it. Only v2 bits.
  FeatureBits required = 0;
  // With kKvFormatsFeature in `features`: the stored K and V formats the
  // implementation offers (Implementation::kv_formats, bit 1u << f); K and V
  // are stored only in these (gen/kv_format_draws.h).
  uint32_t kv_formats = 0;
  // The ABI v3 numerics the implementation declares (Implementation::numerics,
  // ATTNCHECK_NUMERICS_*): a drawn problem holds those that apply to its call
  // (Problem::numerics), and q keeps their precondition (gen/numerics_draws.h).
  uint32_t numerics = 0;
  bool explicit_scale = true;   // may draw an explicit scale (else always the default)
  unsigned families = kClassicFamilies;
  // Grows lengths and dims by this factor in long runs (ATTNCHECK_SIZE=long).
  double size_factor = 1.0;
  // Where shapes come from: empty, the single range of the fields above
  // (today's `small` shapes); else one domain per case, chosen by weight.
  std::vector<ShapeDomain> domains;
  // head_dim from this list when non-empty (the probe's findings, --head-dim);
  // else drawn from the size ramp, and with `kernel_head_dim_chance` from
  // kKernelHeadDims regardless of the ramp, so every run sees them.
  std::vector<int64_t> head_dims;
  double kernel_head_dim_chance = 0;
  // Lengths are drawn as multiples of these (an implementation that tiles
  // without a remainder path, as the probe found); 1: any length.
  int64_t q_len_multiple = 1, kv_len_multiple = 1;
  // With this probability a case takes one of the shapes of the public bug
  // reports (kv_len = 1 mod 32, seq_len = 64 mod 128, GQA ratios 28/4, 5/1,
  // 20/1, head dims 59 to 576, one query over a long cache, batch >= 2 with a
  // broadcast bias; generators.cpp, ReportShape), as far as the limits above
  // allow. 0: never (GenOptions' default, so that its seeds draw what they drew).
  double report_shape_chance = 0;
  // The report head dims may reach this (512, 576: MLA decode) where it is
  // above max_head_dim, which caps the other draws; a head_dims list wins.
  int64_t max_report_head_dim = 0;
  // The work one case may cost, in the multiply-adds of a plain kernel
  // (call_work, gen/generators.h), over all the calls a law makes of it:
  // each call gets max_case_work / case_calls (a 32nd of that where the
  // problem may be a backward one: generators.cpp, kBackwardWork). A drawn shape above it loses batch, then head and value dims,
  // then heads, then length (generators.cpp, fit_work); 0: no cap (GenOptions'
  // default). The profiles set it so that a plain triple-loop f32 kernel
  // stays far under the default 2,000 ms CPU limit of a call (docs/shapes.md).
  int64_t max_case_work = 0;
  // The calls (of the case's size) a law makes of one case: the case and one
  // derived call for most laws; more for the laws that compose or split a case
  // (their Law::tailor says so). A batched call of n sequences counts n.
  int64_t case_calls = 2;
};

}  // namespace attncheck
