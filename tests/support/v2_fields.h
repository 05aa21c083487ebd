// Draws the ABI v2 fields onto a problem from sample_problem, for the oracle's
// tests (tests/core/oracle_v2_test.cpp) and the bound's validation
// (bench/validate_bound.cpp). A stand-in, in one function, until the
// generators' sample_problem draws every v2 field itself; replace the callers'
// `draw_v2_fields(p, seed, features)` with the GenOptions that ask for them.
//
// Each feature in `features` is drawn with probability 1/2, those in `force`
// always (where the shape allows: GQA needs heads > 1):
//   GQA      kv_heads a proper divisor of heads; k, v [batch][kv_heads][kv_len][dim]
//   LENGTHS  q_lens, kv_lens (0 rarely, the full extent often); the padding rows
//            of q and keys of k, v, and the mask and bias entries there, hold NaN
//   WINDOW   window_left, window_right (-1 or 0..kv_len, at least one bounded)
//   SOFTCAP  0.5 to 50
//   BIAS     Gaussians of size 1, 10 or 100 in the dtype, broadcast at random, some -inf
//   ALIBI    the standard slopes 2^(-8 (h + 1) / H), or random floats in (-1, 2)
//   SINKS    floats of size 1, 5 or 20 (float-representable)
//   LSE      lse_requested
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "problem/dtype.h"
#include "problem/problem.h"

namespace attncheck::testing {

inline void draw_v2_fields(Problem& p, uint64_t seed, FeatureBits features, FeatureBits force = 0) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 0x5151);
  std::uniform_real_distribution<double> unit(0, 1);
  std::normal_distribution<double> gauss(0, 1);
  const auto pick = [&](FeatureBits f) { return (force & f) || ((features & f) && unit(rng) < 0.5); };
  const auto below = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  Shape& sh = p.shape;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();

  if (pick(ATTNCHECK_FEATURE_GQA) && sh.heads > 1) {
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d < sh.heads; ++d)
      if (sh.heads % d == 0) divisors.push_back(d);
    const int64_t kvh = divisors[below(static_cast<int64_t>(divisors.size()))];
    const int64_t group = sh.heads / kvh;
    // kv head g of batch b keeps the keys of query head g * group.
    std::vector<double> k(sh.batch * kvh * sh.kv_len * sh.head_dim), v(sh.batch * kvh * sh.kv_len * sh.value_dim);
    for (int64_t b = 0; b < sh.batch; ++b)
      for (int64_t g = 0; g < kvh; ++g) {
        const int64_t from = b * sh.heads + g * group, to = b * kvh + g;
        std::copy_n(&p.k[from * sh.kv_len * sh.head_dim], sh.kv_len * sh.head_dim, &k[to * sh.kv_len * sh.head_dim]);
        std::copy_n(&p.v[from * sh.kv_len * sh.value_dim], sh.kv_len * sh.value_dim, &v[to * sh.kv_len * sh.value_dim]);
      }
    p.k = std::move(k);
    p.v = std::move(v);
    sh.kv_heads = kvh;
  }
  if (pick(ATTNCHECK_FEATURE_WINDOW)) {
    const auto side = [&]() { return unit(rng) < 0.3 ? int64_t{-1} : below(sh.kv_len + 1); };
    p.window_left = side();
    p.window_right = side();
    if (p.window_left < 0 && p.window_right < 0) p.window_left = below(sh.kv_len + 1);
  }
  if (pick(ATTNCHECK_FEATURE_SOFTCAP)) {
    const double caps[] = {0.5, 1, 2.5, 5, 20, 30, 50};
    p.softcap = caps[below(7)] * (1 + 0.25 * unit(rng));
  }
  if (pick(ATTNCHECK_FEATURE_BIAS)) {
    p.bias_broadcast = {unit(rng) < 0.7, unit(rng) < 0.7, unit(rng) < 0.7};
    p.bias.resize(p.bias_broadcast.size(sh));
    const double size = std::pow(10.0, static_cast<double>(below(3)));
    const double hidden = unit(rng) < 0.5 ? 0.0 : 0.2;
    for (double& x : p.bias) x = unit(rng) < hidden ? -inf : round_to(p.dtype, size * gauss(rng));
  }
  if (pick(ATTNCHECK_FEATURE_ALIBI)) {
    const bool standard = unit(rng) < 0.5;
    for (int64_t h = 0; h < sh.heads; ++h)
      p.alibi_slopes.push_back(standard ? std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(sh.heads))
                                        : round_to(DType::f32, 3 * unit(rng) - 1));
  }
  if (pick(ATTNCHECK_FEATURE_SINKS)) {
    const double sizes[] = {1, 5, 20};
    const double size = sizes[below(3)];
    for (int64_t h = 0; h < sh.heads; ++h) p.sinks.push_back(round_to(DType::f32, size * gauss(rng)));
  }
  if (pick(ATTNCHECK_FEATURE_LSE)) p.lse_requested = true;
  if (pick(ATTNCHECK_FEATURE_LENGTHS)) {
    const auto length = [&](int64_t full) -> int32_t {
      const double r = unit(rng);
      if (r < 0.05) return 0;
      if (r < 0.3) return static_cast<int32_t>(full);
      return static_cast<int32_t>(1 + below(full));
    };
    const bool q_side = unit(rng) < 0.6, kv_side = !q_side || unit(rng) < 0.6;
    for (int64_t b = 0; b < sh.batch; ++b) {
      if (q_side) p.q_lens.push_back(length(sh.q_len));
      if (kv_side) p.kv_lens.push_back(length(sh.kv_len));
    }
    // Padding holds NaN, which must change nothing.
    const int64_t kvh = sh.kv_head_count();
    for (int64_t b = 0; b < sh.batch; ++b) {
      for (int64_t h = 0; h < sh.heads; ++h)
        for (int64_t i = p.q_len_of(b); i < sh.q_len; ++i)
          for (int64_t d = 0; d < sh.head_dim; ++d) p.q[p.q_at(b * sh.heads + h, i, d)] = nan;
      for (int64_t g = 0; g < kvh; ++g)
        for (int64_t j = p.kv_len_of(b); j < sh.kv_len; ++j) {
          for (int64_t d = 0; d < sh.head_dim; ++d) p.k[p.k_at(b * kvh + g, j, d)] = nan;
          for (int64_t c = 0; c < sh.value_dim; ++c) p.v[p.v_at(b * kvh + g, j, c)] = nan;
        }
    }
    if (p.has_bias() && p.bias_broadcast.per_batch) {
      for (int64_t b = 0; b < sh.batch; ++b)
        for (int64_t h = 0; h < (p.bias_broadcast.per_head ? sh.heads : 1); ++h)
          for (int64_t i = 0; i < (p.bias_broadcast.per_row ? sh.q_len : 1); ++i)
            for (int64_t j = 0; j < sh.kv_len; ++j)
              if (j >= p.kv_len_of(b) || (p.bias_broadcast.per_row && i >= p.q_len_of(b)))
                p.bias[p.bias_broadcast.at(sh, b, h, i, j)] = nan;
    }
  }
}

}  // namespace attncheck::testing
