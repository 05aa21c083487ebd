#include "gen/profiles.h"

#include <algorithm>

namespace attncheck {

namespace {

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
  return g;
}

GenOptions small_options() { return GenOptions{}; }
GenOptions decode_options() { return spanning({decode_domain(16384)}); }
GenOptions prefill_options() { return spanning({prefill_domain(4096)}); }
GenOptions chunked_options() { return spanning({chunked_domain(512, 4096)}); }
// Mostly today's shapes (they find most faults, cheaply), with decode rows of
// up to 2048 keys, prefill up to 160 and chunked prefill up to 48 x 384: one
// check of one built-in takes about 3 s on 2 cores (drawing the cases, the
// oracle and the 16-bit encodings share it); the long profiles are for nightly runs.
GenOptions default_options() {
  ShapeDomain small = small_domain();
  small.weight = 0.75;
  ShapeDomain decode = decode_domain(2048);
  decode.weight = 0.1;
  ShapeDomain prefill = prefill_domain(160);
  prefill.weight = 0.08;
  ShapeDomain chunked = chunked_domain(48, 384);
  chunked.weight = 0.07;
  return spanning({small, decode, prefill, chunked});
}

constexpr Profile kProfiles[] = {
    {"default", "mostly small, with decode (kv_len to 2048), prefill (to 160) and chunked (48 x 384) shapes",
     default_options},
    {"small", "every extent up to 72; the classic value families", small_options},
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
