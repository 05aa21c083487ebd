// A v2test::Case using every ABI v2 feature at random, in random layouts: what the v2
// example plugin's forward and backward tests draw (example_v2_plugin_test,
// example_v2_backward_test). Values on the grid every dtype holds exactly.
#ifndef ATTNCHECK_TESTS_V2_RANDOM_CASE_H
#define ATTNCHECK_TESTS_V2_RANDOM_CASE_H

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "v2_test_plugin.h"

namespace v2test {

// Dense half of the time, else a random axis order with gaps of 0-3 elements and lead
// room of 0-2.
inline Layout random_layout(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Layout l;
  if (pick(0, 1) == 1) return l;
  std::array<int, 3> axes{0, 1, 2};
  std::shuffle(axes.begin(), axes.end(), rng);
  l.order = {axes[0], axes[1], axes[2], 3};
  l.gap = {pick(0, 3), pick(0, 3), pick(0, 3)};
  l.lead = pick(0, 2);
  return l;
}

// A case in one of `dtypes`, each feature used with probability 1/2: lengths (padding
// rows and keys, empty batches), causal rules, windows, scale, soft-cap, a mask and a
// bias broadcast at random (-inf entries in the bias), ALiBi, sinks, lse.
template <size_t N>
Case random_case(std::mt19937& rng, const attncheck_dtype (&dtypes)[N]) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto coin = [&] { return pick(0, 1) == 1; };
  const attncheck_dtype t = dtypes[pick(0, static_cast<int>(N) - 1)];
  const int64_t kv_heads = pick(1, 2), heads = kv_heads * pick(1, 3), batch = pick(1, 3);
  Case c = shaped(t, batch, heads, kv_heads, pick(1, 5), pick(1, 6), pick(1, 4), pick(1, 3), static_cast<uint32_t>(rng()));
  c.q_layout = random_layout(rng), c.k_layout = random_layout(rng), c.v_layout = random_layout(rng),
  c.out_layout = random_layout(rng);
  if (coin()) {
    for (int64_t b = 0; b < batch; ++b) {
      c.q_lens.push_back(pick(0, static_cast<int>(c.q_len)));
      c.kv_lens.push_back(pick(0, static_cast<int>(c.kv_len)));
    }
    if (coin()) c.q_lens.clear();
  }
  c.causal = static_cast<attncheck_causal>(pick(0, 2));
  if (coin()) c.window_left = pick(-1, 3), c.window_right = pick(-1, 3);
  if (coin()) c.scale = pick(1, 8) * 0.25;
  if (coin()) c.softcap = pick(1, 8) * 0.5;
  if (coin()) {
    c.mask_broadcast = Broadcast{coin(), coin(), coin()};
    const auto ext = c.stored_extents(c.mask_broadcast);
    c.mask.resize(static_cast<size_t>(ext[0] * ext[1] * ext[2] * ext[3]));
    for (uint8_t& m : c.mask) m = static_cast<uint8_t>(pick(0, 3) != 0);
  }
  if (coin()) {
    c.bias_broadcast = Broadcast{coin(), coin(), coin()};
    const auto ext = c.stored_extents(c.bias_broadcast);
    c.bias.resize(static_cast<size_t>(ext[0] * ext[1] * ext[2] * ext[3]));
    for (double& b : c.bias) b = pick(0, 5) == 0 ? -INFINITY : grid(rng, 32, 0.125);
  }
  if (coin())
    for (int64_t h = 0; h < heads; ++h) c.alibi_slopes.push_back(static_cast<float>(std::ldexp(1.0, -pick(0, 4))));
  if (coin())
    for (int64_t h = 0; h < heads; ++h) c.sinks.push_back(static_cast<float>(grid(rng, 16, 0.25)));
  c.want_lse = coin();
  return c;
}

// A one-line description of a case, for failure messages.
inline std::string describe(const Case& c) {
  return name_of(c.dtype) + ", batch " + std::to_string(c.batch) + ", heads " + std::to_string(c.heads) + "/" +
         std::to_string(c.kv_heads) + ", q_len " + std::to_string(c.q_len) + ", kv_len " + std::to_string(c.kv_len) +
         ", causal " + std::to_string(c.causal) + ", window " + std::to_string(c.window_left) + "," +
         std::to_string(c.window_right) + ", softcap " + std::to_string(c.softcap) + ", mask " +
         std::to_string(!c.mask.empty()) + ", bias " + std::to_string(!c.bias.empty()) + ", alibi " +
         std::to_string(!c.alibi_slopes.empty()) + ", sinks " + std::to_string(!c.sinks.empty()) + ", lens " +
         std::to_string(!c.kv_lens.empty()) + ", lse " + std::to_string(c.want_lse);
}

}  // namespace v2test

#endif
