#include "fuzz_problems.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string_view>

#include "gen/generators.h"
#include "gen/profiles.h"
#include "run/shape_flags.h"

namespace attncheck::fuzz {

namespace {

bool set(const char* s) { return s && *s; }

// One ATTNCHECK_FUZZ_MAX_* value: a whole number from 1 to 2^20 (the largest
// extent check's flags take), else false with `error` naming it.
bool read_cap(const char* name, const char* text, int64_t& cap, std::string& error) {
  if (!set(text)) return true;
  const std::string_view s(text);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 1 || v > (1 << 20)) {
    error = std::string(name) + "='" + text + "': expected a whole number from 1 to 1048576";
    return false;
  }
  cap = v;
  return true;
}

const char* any_cap(const FuzzShapeEnv& env) {
  if (set(env.max_batch)) return "ATTNCHECK_FUZZ_MAX_BATCH";
  if (set(env.max_heads)) return "ATTNCHECK_FUZZ_MAX_HEADS";
  if (set(env.max_len)) return "ATTNCHECK_FUZZ_MAX_LEN";
  if (set(env.max_dim)) return "ATTNCHECK_FUZZ_MAX_DIM";
  return nullptr;
}

// The profile and flags, as check reads them: its flags' reader, then shape_options.
bool read_profile(const FuzzShapeEnv& env, FuzzShapes& out, std::string& error) {
  ShapeFlags flags;
  if (set(env.profile)) {
    if (!find_profile(env.profile)) {
      error = std::string("ATTNCHECK_FUZZ_PROFILE='") + env.profile + "': choose " + profile_names();
      return false;
    }
    flags.profile = env.profile;
  }
  if (set(env.shapes)) {
    if (!read_shape_flags_text(env.shapes, flags, error)) {
      error = std::string("ATTNCHECK_FUZZ_SHAPES='") + env.shapes + "': " + error;
      return false;
    }
    if (set(env.profile) && flags.profile != env.profile) {
      error = std::string("ATTNCHECK_FUZZ_PROFILE='") + env.profile + "' and --profile " + flags.profile +
              " in ATTNCHECK_FUZZ_SHAPES: give the profile once";
      return false;
    }
  }
  out.profile = shape_options(flags, error);
  if (!out.profile) {
    error = std::string(set(env.shapes) ? "ATTNCHECK_FUZZ_SHAPES='" + std::string(env.shapes) + "'"
                                        : "ATTNCHECK_FUZZ_PROFILE") + ": " + error;
    return false;
  }
  // Spelled as check's command line: the profile always, then the flags that differ.
  const std::string rest = shape_flags_text(flags);
  out.flags = rest.rfind(" --profile ", 0) == 0 ? rest.substr(1) : "--profile " + flags.profile + rest;
  return true;
}

}  // namespace

FuzzShapeEnv FuzzShapeEnv::of_this_process() {
  FuzzShapeEnv e;
  e.profile = std::getenv("ATTNCHECK_FUZZ_PROFILE");
  e.shapes = std::getenv("ATTNCHECK_FUZZ_SHAPES");
  e.max_batch = std::getenv("ATTNCHECK_FUZZ_MAX_BATCH");
  e.max_heads = std::getenv("ATTNCHECK_FUZZ_MAX_HEADS");
  e.max_len = std::getenv("ATTNCHECK_FUZZ_MAX_LEN");
  e.max_dim = std::getenv("ATTNCHECK_FUZZ_MAX_DIM");
  return e;
}

std::optional<FuzzShapes> read_fuzz_shapes(const FuzzShapeEnv& env, std::string& error) {
  FuzzShapes out;
  FuzzCaps& c = out.caps;
  if (!read_cap("ATTNCHECK_FUZZ_MAX_BATCH", env.max_batch, c.max_batch, error) ||
      !read_cap("ATTNCHECK_FUZZ_MAX_HEADS", env.max_heads, c.max_heads, error) ||
      !read_cap("ATTNCHECK_FUZZ_MAX_LEN", env.max_len, c.max_len, error) ||
      !read_cap("ATTNCHECK_FUZZ_MAX_DIM", env.max_dim, c.max_dim, error))
    return std::nullopt;
  if (!set(env.profile) && !set(env.shapes)) return out;
  // Two ways to say one thing would leave one of them ignored: refused.
  if (const char* cap = any_cap(env)) {
    error = std::string(cap) + " beside " + (set(env.profile) ? "ATTNCHECK_FUZZ_PROFILE" : "ATTNCHECK_FUZZ_SHAPES") +
            ": with a profile, narrow the shapes with check's flags in ATTNCHECK_FUZZ_SHAPES "
            "(--q-len, --kv-len, --batch, --heads, --head-dim)";
    return std::nullopt;
  }
  if (!read_profile(env, out, error)) return std::nullopt;
  return out;
}

const FuzzShapes& fuzz_shapes_from_env() {
  static const FuzzShapes shapes = [] {
    std::string error;
    std::optional<FuzzShapes> s = read_fuzz_shapes(FuzzShapeEnv::of_this_process(), error);
    if (!s) {
      std::fprintf(stderr, "attncheck fuzz: %s\n", error.c_str());
      std::exit(2);
    }
    return *s;
  }();
  return shapes;
}

const FuzzCaps& FuzzCaps::from_env() { return fuzz_shapes_from_env().caps; }

void announce_shapes(const char* target) {
  const FuzzShapes& s = fuzz_shapes_from_env();
  if (s.profile)
    std::fprintf(stderr, "%s: shapes of attncheck check %s (ATTNCHECK_FUZZ_PROFILE, ATTNCHECK_FUZZ_SHAPES)\n", target,
                 s.flags.c_str());
}

namespace {

// Features, dtypes and values: the same whatever decides the shapes.
GenOptions with_fuzz_values(GenOptions g, FeatureBits features, Problems kind, bool finite_only) {
  g.dtypes = every_dtype();
  if (kind == Problems::backward) {
    g.features = features | kBackwardFeature;
    g.required = kBackwardFeature;
  } else {
    g.features = features & ~kBackwardFeature;
    g.required = 0;
  }
  g.families = kAllFamilies | kSpecials | kRawBits | (finite_only ? kFiniteOnly : 0u);
  return g;
}

}  // namespace

GenOptions fuzz_options(FeatureBits features, Problems kind, bool finite_only, const FuzzCaps& caps) {
  GenOptions g;
  g.max_batch = caps.max_batch;
  g.max_heads = caps.max_heads;
  g.max_q_len = g.max_kv_len = caps.max_len;
  g.max_head_dim = g.max_value_dim = caps.max_dim;
  return with_fuzz_values(g, features, kind, finite_only);
}

GenOptions fuzz_options(FeatureBits features, Problems kind, bool finite_only, const FuzzShapes& shapes) {
  if (!shapes.profile) return fuzz_options(features, kind, finite_only, shapes.caps);
  return with_fuzz_values(*shapes.profile, features, kind, finite_only);
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
  cache.push_back({features, kind, finite_only, fuzz_options(features, kind, finite_only, fuzz_shapes_from_env())});
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
