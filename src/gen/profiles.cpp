#include "gen/profiles.h"

#include <algorithm>

namespace attncheck {

namespace {

// The work one case may cost (GenOptions::max_case_work; call_work in
// gen/generators.h counts it): 2^29 multiply-adds, about 4,096 x 4,096 keys of
// prefill at head_dim = value_dim = 1 for a law that calls once. The naive
// built-in (a plain triple loop in f32) takes 0.2 s for that on one core of the
// 2-core CI machine, a tenth of the default 2,000 ms CPU limit of a call
// (docs/shapes.md gives the measurement): a slow kernel of the same loops
// stays far under the limit however the law divides the case.
constexpr int64_t kMaxCaseWork = int64_t{1} << 29;

// The default profile's long rows (docs/speed.md gives their measured cost),
// at fixed sizes of the ramp (ShapeDomain::from_size): decode of 1 to 4
// queries over 2,049 to 32,768 keys at sizes 91 and 95 (2 cases of a law's
// run, at 100 cases as at 25: RapidCheck's sizes are i * 100 / (cases - 1),
// so 25 cases draw at sizes 87, 91 and 95 among others), prefill of 161 to
// 4,096 rows at size 87 in 15% of the laws' runs (its oracle and its call are
// the costly part: about 0.2 s each at 4,096; about 8 of them in a check of
// 54 laws). head_dim and value_dim at most 16, and the
// work cap shortens the prefill rows of a law that calls more than once
// (4,096 only in the single-call laws).
constexpr int kLongDecodeSizes[2] = {91, 95}, kLongPrefillSize = 87;
constexpr double kLongPrefillChance = 0.15;
constexpr int64_t kLongRowMaxDim = 16;
// Gaussian values on long rows, plain or scaled as trained models' (logits
// reaching 30 to 50): logits the fast oracle judges on its vectorised path
// (measured: 0.2 to 18 ms a call, 16-bit dtypes included), continuous and
// varied, so that every block of 1,024 keys has its own max and its own
// output: small or sparse integers tie the row's max in every block,
// near-equal keys or queries make every logit alike, and a constant V hides
// any weight, each of which hid a split-KV merge that forgets the blocks'
// maxima (the zoo's split_kv_merge_unscaled) on most long cases; plain
// Gaussians alone average every block's output to about the same (caught in
// 9 of 12 long decode cases, some at 1.2 times the bound), model-sized logits
// make the blocks' outputs differ (16 of 20 in f32 and f64, at 12 to 10^13
// times the bound; 12 of 16 in f16 and bf16). The
// other families are drawn on the other shapes, and on long rows by the
// nightly decode and prefill profiles.
constexpr unsigned kLongRowFamilies = kGaussian | kModelLogits;

// Shape domains the profiles are made of. Limits of batch x heads keep the
// long rows affordable: every case is evaluated by the oracle several times
// (about 10 GFLOP/s on 2 cores for f32, 5 for f64: docs/speed.md).
ShapeDomain small_domain() { return ShapeDomain{}; }

ShapeDomain decode_domain(int64_t max_kv) {
  ShapeDomain d;
  d.name = "decode";
  d.max_batch = 2, d.max_heads = 2;
  d.min_q_len = 1, d.max_q_len = 8;
  d.min_kv_len = 1, d.max_kv_len = max_kv;
  d.ramped = false;
  return d;
}

ShapeDomain prefill_domain(int64_t max_len) {
  ShapeDomain d;
  d.name = "prefill";
  d.max_batch = 1, d.max_heads = 2;
  d.min_q_len = 16, d.max_q_len = max_len;
  d.min_kv_len = 16, d.max_kv_len = max_len;
  d.q_equals_kv = true;
  d.masks = false;
  return d;
}

ShapeDomain chunked_domain(int64_t max_q, int64_t max_kv) {
  ShapeDomain d;
  d.name = "chunked";
  d.max_batch = 1, d.max_heads = 2;
  d.min_q_len = 1, d.max_q_len = max_q;
  d.min_kv_len = 2, d.max_kv_len = max_kv;
  d.q_below_kv = true;
  d.masks = max_q * max_kv <= 256 * 1024;
  return d;
}

// Long rows for the default check (docs/shapes.md, "Long rows"): decode of
// one to four queries over 2,049 to 32,768 keys, where real kernels switch to
// split-KV (partitions of the keys merged by their lse) and accumulate over
// thousands of keys. head_dim and value_dim at most max_dim (a probe's
// head_dims list wins), one batch and one head before GQA.
ShapeDomain long_decode_domain(int64_t max_kv, int64_t max_dim) {
  ShapeDomain d = decode_domain(max_kv);
  d.name = "long_decode";
  d.max_batch = 1, d.max_heads = 1;
  d.max_q_len = 4;
  d.min_kv_len = 2049;
  d.log_lengths = true;
  d.max_dim = max_dim;
  d.families = kLongRowFamilies;
  return d;
}

// Prefill of 161 to 4,096 rows (q_len = kv_len, log-uniform), past the
// default prefill domain's 160: long accumulations in every row.
ShapeDomain long_prefill_domain(int64_t max_len, int64_t max_dim) {
  ShapeDomain d = prefill_domain(max_len);
  d.name = "long_prefill";
  d.min_q_len = d.min_kv_len = 161;
  d.max_heads = 1;
  d.ramped = false;
  d.log_lengths = true;
  d.max_dim = max_dim;
  d.families = kLongRowFamilies;
  return d;
}

// The bug reports' shapes and inputs, in every profile (gen_options.h:
// kReportFamilies, report_shape_chance; generators.cpp says which fault class
// each is for). max_report_head_dim lets 512 and 576 (MLA) through where the
// profile's other head dims stop at 256; max_heads 28 lets the GQA ratios
// through (28/4, 5/1, 20/1), the domains' own max_heads capping every other
// draw; max_batch 2, the broadcast bias over a batch. The work cap keeps
// their cost (28 heads of 576 dims) within a call's budget.
GenOptions with_report_draws(GenOptions g, int64_t max_report_head_dim) {
  g.families |= kReportFamilies;
  g.report_shape_chance = 0.1;
  g.max_report_head_dim = max_report_head_dim;
  g.max_heads = std::max<int64_t>(g.max_heads, 28);
  g.max_batch = std::max<int64_t>(g.max_batch, 2);
  g.max_case_work = kMaxCaseWork;
  return g;
}

// The global limits of a profile: the union of its domains.
GenOptions spanning(std::vector<ShapeDomain> domains) {
  GenOptions g;
  g.domains = std::move(domains);
  g.max_q_len = g.max_kv_len = 1;
  g.max_batch = g.max_heads = 1;
  for (const ShapeDomain& d : g.domains) {
    g.max_q_len = std::max(g.max_q_len, d.max_q_len);
    g.max_kv_len = std::max(g.max_kv_len, d.max_kv_len);
    g.max_batch = std::max(g.max_batch, d.max_batch);
    g.max_heads = std::max(g.max_heads, d.max_heads);
  }
  g.max_head_dim = 256;
  g.max_value_dim = 72;
  g.families = kAllFamilies;
  g.kernel_head_dim_chance = 0.35;
  return with_report_draws(g, 576);
}

// Today's shapes and classic families (its one domain is GenOptions{}'s
// extents), with the bug reports' shapes and inputs within its extents of 72
// (head_dim 59 of the report dims).
GenOptions small_options() {
  GenOptions g;
  g.domains = {small_domain()};
  return with_report_draws(g, 0);
}
GenOptions decode_options() { return spanning({decode_domain(16384)}); }
GenOptions prefill_options() { return spanning({prefill_domain(4096)}); }
GenOptions chunked_options() { return spanning({chunked_domain(512, 4096)}); }
// Mostly today's shapes (they find most faults, cheaply), with decode rows of
// up to 2048 keys, prefill up to 160 and chunked prefill up to 48 x 384, and
// a few long rows (decode to 32,768 keys, prefill to 4,096, at the top of a
// law's size ramp): one check of one built-in takes a few seconds on 2 cores
// (docs/speed.md); the long profiles are for nightly runs.
GenOptions default_options() {
  ShapeDomain small = small_domain();
  small.weight = 0.75;
  ShapeDomain decode = decode_domain(2048);
  decode.weight = 0.1;
  ShapeDomain prefill = prefill_domain(160);
  prefill.weight = 0.08;
  ShapeDomain chunked = chunked_domain(48, 384);
  chunked.weight = 0.07;
  std::vector<ShapeDomain> domains{small, decode, prefill, chunked};
  for (int size : kLongDecodeSizes) {
    ShapeDomain long_decode = long_decode_domain(32768, kLongRowMaxDim);
    long_decode.from_size = size, long_decode.to_size = size + 1;
    domains.push_back(long_decode);
  }
  ShapeDomain long_prefill = long_prefill_domain(4096, kLongRowMaxDim);
  long_prefill.from_size = kLongPrefillSize, long_prefill.to_size = kLongPrefillSize + 1;
  long_prefill.size_chance = kLongPrefillChance;
  domains.push_back(long_prefill);
  return spanning(std::move(domains));
}

constexpr Profile kProfiles[] = {
    {"default",
     "mostly small, with decode (kv_len to 2048), prefill (to 160), chunked (48 x 384) and a few long rows "
     "(decode to 32768 keys, prefill to 4096)",
     default_options},
    {"small", "every extent up to 72; the classic value families and the bug reports'", small_options},
    {"decode", "q_len 1..8, kv_len up to 16384, kernel head dims", decode_options},
    {"prefill", "q_len = kv_len up to 4096, no dense mask", prefill_options},
    {"chunked", "q_len < kv_len up to 512 x 4096, bottom_right causal", chunked_options},
};

}  // namespace

std::span<const Profile> all_profiles() { return kProfiles; }

const Profile* find_profile(std::string_view name) {
  for (const Profile& p : kProfiles)
    if (p.name == name) return &p;
  return nullptr;
}

std::string profile_names() {
  std::string s;
  for (const Profile& p : kProfiles) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

}  // namespace attncheck
