#include "cli/sensitivity_sweep.h"

#include <algorithm>
#include <cmath>

#include "law_framework/query_response.h"
#include "problem/dtype.h"
#include "gen/gen_random.h"

namespace attncheck {
namespace {

// Unit Gaussians in the dtype: q [1][1][q_len][head_dim], k [1][1][kv_len][head_dim],
// v [1][1][kv_len][kv_len].
Problem gaussian_problem(int64_t head_dim, DType dtype, gen::Rng& rng) {
  Problem p;
  p.dtype = dtype;
  p.shape = Shape{1, 1, kSensitivityQLen, kSensitivityKvLen, head_dim, kSensitivityKvLen};
  auto fill = [&](std::vector<double>& x, int64_t n) {
    x.resize(static_cast<size_t>(n));
    for (double& e : x) e = round_to(dtype, gen::gaussian(rng));
  };
  fill(p.q, p.shape.q_size());
  fill(p.k, kSensitivityKvLen * head_dim);
  fill(p.v, kSensitivityKvLen * kSensitivityKvLen);
  return p;
}

}  // namespace

std::vector<int64_t> sensitivity_head_dims() { return {16, 32, 64, 128, 256, 512, 1024}; }

SweepPoint measure_sensitivity(Implementation& impl, int64_t head_dim, DType dtype, uint64_t seed) {
  SweepPoint point;
  point.head_dim = head_dim;
  gen::Rng rng(seed ^ (static_cast<uint64_t>(head_dim) * 0x9E3779B97F4A7C15ull));
  std::vector<double> ratios;
  double entropy = 0, exact_entropy = 0;
  int entropy_rows = 0;
  for (int n = 0; n < kSensitivityProblems; ++n) {
    const Problem p = gaussian_problem(head_dim, dtype, rng);
    std::vector<RowResponse> rows;
    if (auto bad = measure_query_response(impl, p, rows)) {
      point.error = bad->message.empty() ? "the call failed" : bad->message;
      return point;
    }
    for (const RowResponse& r : rows) {
      if (r.measurable && std::isfinite(r.ratio())) ratios.push_back(r.ratio());
      const double h = weight_entropy(impl, p, r.bh, r.i);
      if (std::isnan(h)) {
        point.error = "its attention weights cannot be read (V = identity answered no usable output)";
        return point;
      }
      entropy += h;
      exact_entropy += r.exact_entropy;
      ++entropy_rows;
    }
  }
  if (ratios.empty()) {
    point.error = "no row's exact response rises above the dtype's noise";
    return point;
  }
  std::sort(ratios.begin(), ratios.end());
  const size_t m = ratios.size();
  point.sensitivity = m % 2 ? ratios[m / 2] : (ratios[m / 2 - 1] + ratios[m / 2]) / 2;
  point.rows = static_cast<int>(m);
  point.entropy = entropy / entropy_rows;
  point.exact_entropy = exact_entropy / entropy_rows;
  return point;
}

}  // namespace attncheck
