#include "seed_corpus.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "fuzz_problems.h"
#include "law_sweep.h"
#include "gen/fast_rng.h"
#include "gen/generators.h"

namespace attncheck::fuzz {

namespace {

const char* family_name(unsigned f) {
  switch (f) {
    case kGaussian: return "gaussian";
    case kSmallInts: return "small_ints";
    case kWide: return "wide";
    case kEdge: return "edge";
    case kHugeLogits: return "huge_logits";
    case kModelLogits: return "model_logits";
    case kOutlierChannels: return "outliers";
    case kPositive: return "positive";
    case kNearEqual: return "near_equal";
    case kSpecials: return "specials";
    case kRawBits: return "raw_bits";
    default: return "?";
  }
}

void cover_values(const std::vector<double>& t, std::set<std::string>& c) {
  for (double x : t) {
    if (std::isnan(x)) c.insert("values:nan");
    else if (std::isinf(x)) c.insert("values:inf");
  }
}

// Random bytes for try n of a target (the pick bytes first), from a seed of its own.
std::vector<uint8_t> random_input(const SeedTarget& t, int n, std::size_t size) {
  gen::FastRng r(0x5eedc0de00000000ull ^ (static_cast<uint64_t>(n) * 0x9e3779b97f4a7c15ull) ^ t.name.size() ^
                 (t.prefix.empty() ? 0 : 0x100));
  std::vector<uint8_t> b(size);
  for (uint8_t& x : b) x = static_cast<uint8_t>(r() >> 56);
  return b;
}

// An item as a word of a seed's name: "law:3" -> law3, "values:nan" -> nan.
std::string seed_word(const std::string& item) {
  const std::string kind = item.substr(0, item.find(':')), what = item.substr(item.find(':') + 1);
  if (kind == "law" || kind == "impl") return kind + what;
  if (kind == "mix") return what + "_values";
  if (kind == "scale") return "scale";
  return what;
}

}  // namespace

std::vector<SeedTarget> seed_targets() {
  std::vector<FeatureBits> refs, backward;
  for (const auto& i : references()) refs.push_back(i->features());
  for (const auto& i : backward_references()) backward.push_back(i->features());
  const std::size_t differential = differential_laws().size();
  return {
      {"fuzz_differential", "", 2, refs, differential},
      {"fuzz_overflow", "", 3, refs, laws_named({"finite_for_finite_inputs", "fully_masked_rows_zero", "nan_propagates"}).size(),
       false, true},
      {"fuzz_gradients", "", 2, backward, gradient_judges().size(), true},
      {"fuzz_plugin", "", 2, {kV1Features}, differential},
      {"fuzz_plugin", "v2_", 2, {kAllFeatures}, differential},
  };
}

Drawn draw_as_target(const SeedTarget& t, const uint8_t* data, std::size_t size) {
  // The pick bytes, as law_sweep.h's pick_pair and fuzz_overflow read them (missing: zero).
  uint8_t pick[3] = {0, 0, 0};
  for (std::size_t i = 0; i < t.pick_bytes && i < 3; ++i) pick[i] = i < size ? data[i] : 0;
  const std::size_t skip = std::min(size, t.pick_bytes);
  const FeatureBits features = t.impl_features.empty() ? kV1Features : t.impl_features[pick[0] % t.impl_features.size()];
  const bool finite = t.mix_byte && (pick[2] & 1) == 0;
  const GenOptions o = fuzz_options(features, t.backward ? Problems::backward : Problems::forward, finite);
  gen::ByteChoices choices(data + skip, size - skip);
  Drawn d;
  d.problem = draw_problem_from(o, choices);
  d.consumed = t.pick_bytes + choices.consumed();
  const Problem& p = d.problem;
  std::set<std::string>& c = d.covers;
  c.insert(std::string("dtype:") + std::string(info(p.dtype).name));
  for (FeatureBits b = 1; b <= kBackwardFeature && b != 0; b <<= 1)
    if ((p.features() & b) && !feature_name(b).empty()) c.insert("feature:" + std::string(feature_name(b)));
  if (p.causal != Causal::none) c.insert(p.causal == Causal::top_left ? "causal:top_left" : "causal:bottom_right");
  for (unsigned f = kGaussian; f <= kRawBits; f <<= 1)
    if (choices.families() & f) c.insert(std::string("family:") + family_name(f));
  if (!std::isnan(p.scale)) c.insert("scale:explicit");
  for (const auto* v : {&p.q, &p.k, &p.v, &p.dout}) cover_values(*v, c);
  if (t.impl_features.size() > 1) c.insert("impl:" + std::to_string(pick[0] % t.impl_features.size()));
  // The law byte 1 picks (law_sweep.h, pick_pair): each law gets a seed of its own.
  if (t.law_count > 1)
    c.insert("law:" + std::to_string(pick[1] < 64 ? 0 : 1 + (pick[1] - 64) % (t.law_count - 1)));
  if (t.mix_byte) c.insert(finite ? "mix:finite" : "mix:any");
  return d;
}

std::vector<Seed> choose_seeds(const SeedTarget& t, int tries, std::size_t max_len) {
  std::vector<Seed> seeds{{t.prefix + "empty", {}}};
  std::set<std::string> covered = draw_as_target(t, nullptr, 0).covers;
  for (int n = 0; n < tries; ++n) {
    // Short inputs first: an item is kept from the shortest input that covers it
    // (missing bytes read as zero, so a short input is a small, plain problem,
    // and the seeds stay cheap to run).
    std::vector<uint8_t> bytes = random_input(t, n, std::min<std::size_t>(max_len, 4 + static_cast<std::size_t>(n)));
    const Drawn d = draw_as_target(t, bytes.data(), bytes.size());
    if (d.consumed > max_len) continue;  // read past the input: longer than the target takes
    std::string added;
    const std::size_t before = covered.size();
    for (const std::string& item : d.covers)
      if (covered.insert(item).second && item.rfind("dtype:", 0) != 0 && added.size() < 48) {
        if (!added.empty()) added += '+';
        added += seed_word(item);
      }
    if (covered.size() == before) continue;
    bytes.resize(d.consumed);
    char index[8];
    std::snprintf(index, sizeof index, "%02zu_", seeds.size());
    seeds.push_back({t.prefix + index + std::string(info(d.problem.dtype).name) + (added.empty() ? "" : "_" + added),
                     std::move(bytes)});
  }
  return seeds;
}

std::set<std::string> reachable(const SeedTarget& t, int tries, std::size_t max_len) {
  // Draws of their own (tries a million on), not the ones choose_seeds kept.
  std::set<std::string> all;
  for (int n = 1000000; n < 1000000 + tries; ++n) {
    const std::vector<uint8_t> bytes = random_input(t, n, max_len);
    const Drawn d = draw_as_target(t, bytes.data(), bytes.size());
    if (d.consumed <= max_len) all.insert(d.covers.begin(), d.covers.end());
  }
  return all;
}

std::string problem_dictionary() {
  std::string out =
      "# Edge values of each dtype as the fuzz targets' byte source reads a raw element of the\n"
      "# kSpecials family: the selector byte 200 (0xc8, >= 160: a raw pattern), then the\n"
      "# element's bytes, little-endian (gen/choice_source.h, value_draws.cpp).\n"
      "# Written by fuzz/make_seed_corpus.cpp.\n";
  struct Named { const char* name; double (*value)(DType); };
  const Named values[] = {
      {"inf", [](DType) { return std::numeric_limits<double>::infinity(); }},
      {"neg_inf", [](DType) { return -std::numeric_limits<double>::infinity(); }},
      {"nan", [](DType) { return std::numeric_limits<double>::quiet_NaN(); }},
      {"one", [](DType) { return 1.0; }},
      {"neg_zero", [](DType) { return -0.0; }},
      {"max", [](DType t) { return max_finite(t); }},
      {"min_sub", [](DType t) { return min_subnormal(t); }},
      {"min_normal", [](DType t) { return min_normal(t); }},
  };
  for (DType t : every_dtype())
    for (const Named& v : values) {
      uint8_t bytes[8] = {};
      encode_element(t, v.value(t), bytes);
      out += std::string(info(t).name) + "_" + v.name + "=\"\\xc8";
      for (std::size_t i = 0; i < dtype_bytes(t); ++i) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", bytes[i]);
        out += hex;
      }
      out += "\"\n";
    }
  return out;
}

}  // namespace attncheck::fuzz
