#include "gen/profiles.h"

#include <algorithm>

namespace attncheck {

namespace {

// The default profile's long rows (docs/speed.md gives their measured cost),
// at fixed sizes of the ramp (ShapeDomain::from_size): 4 decode cases of 2,049
// to 32,768 keys (sizes 95..98) and 1 prefill case of 161 to 4,096 rows (size
// 91) in a law's 100; at 25 cases one of each (sizes 91 and 95). head_dim and
// value_dim at most 16.
constexpr int kLongDecodeSizes[2] = {95, 99}, kLongPrefillSizes[2] = {91, 92};
constexpr int64_t kLongRowMaxDim = 16;
// Values of ordinary magnitude on long rows: logits the fast oracle judges on
// its vectorised path (huge, model-sized or scaled logits in a 16-bit dtype go
// to its careful path, seconds a call at 4,096 x 4,096).
constexpr unsigned kLongRowFamilies = kGaussian | kSmallInts | kPositive | kNearEqual | kSparseInts;

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
// head_dims list wins), one batch and one head before GQA: a case holds a
// few hundred thousand elements, so the fast oracle pays for a few per law.
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
// profile's other head dims stop at 256.
GenOptions with_report_draws(GenOptions g, int64_t max_report_head_dim) {
  g.families |= kReportFamilies;
  g.report_shape_chance = 0.25;
  g.max_report_head_dim = max_report_head_dim;
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
  // (Batch 2 for the bug reports' broadcast bias, beyond a domain of one
  // sequence; every other draw keeps its domain's max_batch.)
  g.max_batch = std::max<int64_t>(g.max_batch, 2);
  g.max_head_dim = 256;
  g.max_value_dim = 72;
  g.families = kAllFamilies;
  g.kernel_head_dim_chance = 0.35;
  return with_report_draws(g, 576);
}

// Today's shapes and classic families, with the bug reports' shapes and
// inputs within its extents of 72 (head_dim 59 of the report dims).
GenOptions small_options() { return with_report_draws(GenOptions{}, 0); }
GenOptions decode_options() { return spanning({decode_domain(16384)}); }
GenOptions prefill_options() { return spanning({prefill_domain(4096)}); }
GenOptions chunked_options() { return spanning({chunked_domain(512, 4096)}); }
// Mostly today's shapes (they find most faults, cheaply), with decode rows of
// up to 2048 keys, prefill up to 160 and chunked prefill up to 48 x 384, and
// a few long rows (decode to 32,768 keys, prefill to 4,096; 5 cases of a
// law's 100, at the top of its size ramp): one check of one built-in takes a few seconds on 2 cores
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
  ShapeDomain long_decode = long_decode_domain(32768, kLongRowMaxDim);
  long_decode.from_size = kLongDecodeSizes[0], long_decode.to_size = kLongDecodeSizes[1];
  ShapeDomain long_prefill = long_prefill_domain(4096, kLongRowMaxDim);
  long_prefill.from_size = kLongPrefillSizes[0], long_prefill.to_size = kLongPrefillSizes[1];
  return spanning({small, decode, prefill, chunked, long_decode, long_prefill});
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
