// Per-element cost of the double-word building blocks of the f64 oracle
// (issue #12) against their plain double counterparts: exp of a DW array vs
// std::exp, a DW dot product (Dot2) vs a plain double dot. Items/s = elements/s.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "oracle/double_double_array.h"

namespace {

using namespace attncheck::dd;

std::vector<double> random_vector(int64_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

void BM_DdExpArray(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<double> hi = random_vector(n, -40, 0, 1), lo(n, 0.0);
  std::vector<double> oh(n), ol(n);
  for (auto _ : state) {
    dd_exp_array(hi.data(), lo.data(), oh.data(), ol.data(), n);
    benchmark::DoNotOptimize(oh.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_DdExpArray)->Arg(4096);

void BM_StdExp(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<double> x = random_vector(n, -40, 0, 1);
  std::vector<double> y(n);
  for (auto _ : state) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_StdExp)->Arg(4096);

void BM_DdDot(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<double> a = random_vector(n, -1, 1, 2), b = random_vector(n, -1, 1, 3);
  for (auto _ : state) {
    DotResult r = dd_dot(a.data(), b.data(), n);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_DdDot)->Arg(64)->Arg(128)->Arg(4096);

// The plain dot as a build without -march compiles it: in order, SSE2, no
// reassociation (what the double oracle path gets without its own vectorisation).
void BM_DoubleDot(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<double> a = random_vector(n, -1, 1, 2), b = random_vector(n, -1, 1, 3);
  for (auto _ : state) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_DoubleDot)->Arg(64)->Arg(128)->Arg(4096);

void BM_DdAxpy(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<double> v = random_vector(n, -1, 1, 4);
  std::vector<double> acc_hi(n, 0.0), acc_lo(n, 0.0);
  const DW w{0.25, 0x1p-60};
  for (auto _ : state) {
    dd_axpy(w, v.data(), acc_hi.data(), acc_lo.data(), n);
    benchmark::DoNotOptimize(acc_hi.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_DdAxpy)->Arg(128);

}  // namespace

BENCHMARK_MAIN();
