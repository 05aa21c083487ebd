#include "fuzz_problems.h"

#include <cstdlib>
#include <deque>

#include "gen/generators.h"

namespace attncheck::fuzz {

namespace {

int64_t env_cap(const char* name, int64_t fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  const long long v = std::strtoll(s, nullptr, 10);
  return v >= 1 ? v : fallback;
}

}  // namespace

const FuzzCaps& FuzzCaps::from_env() {
  static const FuzzCaps caps = [] {
    FuzzCaps c;
    c.max_batch = env_cap("ATTNCHECK_FUZZ_MAX_BATCH", c.max_batch);
    c.max_heads = env_cap("ATTNCHECK_FUZZ_MAX_HEADS", c.max_heads);
    c.max_len = env_cap("ATTNCHECK_FUZZ_MAX_LEN", c.max_len);
    c.max_dim = env_cap("ATTNCHECK_FUZZ_MAX_DIM", c.max_dim);
    return c;
  }();
  return caps;
}

GenOptions fuzz_options(FeatureBits features, Problems kind, bool finite_only, const FuzzCaps& caps) {
  GenOptions g;
  g.dtypes = every_dtype();
  g.max_batch = caps.max_batch;
  g.max_heads = caps.max_heads;
  g.max_q_len = g.max_kv_len = caps.max_len;
  g.max_head_dim = g.max_value_dim = caps.max_dim;
  if (kind == Problems::backward) {
    g.features = features | kBackwardFeature;
    g.required = kBackwardFeature;
  } else {
    g.features = features & ~kBackwardFeature;
  }
  g.families = kAllFamilies | kSpecials | kRawBits | (finite_only ? kFiniteOnly : 0u);
  return g;
}

namespace {

// The options of each (features, kind, mix) a target asks for, built once: a
// target has a handful (one per implementation and value mix), and an input
// costs tens of microseconds, so building GenOptions per input would show.
const GenOptions& options_for(FeatureBits features, Problems kind, bool finite_only) {
  struct Entry {
    FeatureBits features;
    Problems kind;
    bool finite_only;
    GenOptions options;
  };
  static std::deque<Entry> cache;  // a deque: references stay valid as it grows
  for (const Entry& e : cache)
    if (e.features == features && e.kind == kind && e.finite_only == finite_only) return e.options;
  cache.push_back({features, kind, finite_only, fuzz_options(features, kind, finite_only)});
  return cache.back().options;
}

}  // namespace

Problem fuzz_problem(const uint8_t* data, std::size_t size, FeatureBits features, bool finite_only) {
  return problem_from_bytes(options_for(features, Problems::forward, finite_only), data, size);
}

Problem fuzz_backward_problem(const uint8_t* data, std::size_t size, FeatureBits features) {
  return problem_from_bytes(options_for(features, Problems::backward, false), data, size);
}

}  // namespace attncheck::fuzz
