// The shapes every attncheck_bench family runs at, their names and their
// arithmetic, in one place so that forward/, oracle/ and torch/ figures at the
// same name are the same computation (bench/run-table.sh divides them).
//
// Plain C++17 with no attncheck header: torch_bench.cpp includes it too, and
// libtorch 1.13's headers keep that file on C++17.
//
// Example usage:
//   for (const BenchShape& s : forward_shapes()) register(std::string("forward/online/") + s.name(), s);
//   state.counters["GFLOP/s"] = gflops_counter(s);
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attncheck::bench {

// One self-attention call: q_len = kv_len = l, head_dim = value_dim = d,
// causal meaning the ABI's TOP_LEFT rule (key j visible to query i iff j <= i).
struct BenchShape {
  int64_t b = 1, h = 8, l = 256, d = 64;
  bool causal = false;

  // "B1H8L1024D64" or "B1H8L1024D64/causal", the suffix of every benchmark name.
  std::string name() const {
    std::string n = std::string("B").append(std::to_string(b)).append("H").append(std::to_string(h));
    n.append("L").append(std::to_string(l)).append("D").append(std::to_string(d));
    return causal ? n.append("/causal") : n;
  }
  // (query, key) pairs a query actually attends to, per head. Causal counts
  // only the visible pairs (l (l + 1) / 2), not the l^2 a dense kernel could
  // spend on the hidden ones: a kernel that skips hidden tiles is not
  // penalised and one that computes them is not flattered.
  double visible_pairs() const {
    const double n = static_cast<double>(l);
    return causal ? n * (n + 1) / 2 : n * n;
  }
  // Two products per visible pair, each of d multiply-adds: q . k over
  // head_dim and p * v over value_dim, so FLOP = 4 B H Lq Lk D (dense).
  double flop() const { return 4.0 * static_cast<double>(b * h) * visible_pairs() * static_cast<double>(d); }
};

// B1H8, L in {256, 1024, 4096}, D in {64, 128}, each dense and causal.
inline std::vector<BenchShape> forward_shapes() {
  std::vector<BenchShape> shapes;
  for (int64_t l : {256, 1024, 4096})
    for (int64_t d : {64, 128})
      for (bool causal : {false, true}) shapes.push_back({1, 8, l, d, causal});
  return shapes;
}

// The memory shape: 16384 queries and keys, where a full score matrix per head
// would be 16384^2 * 8 heads * 4 bytes = 8 GiB. One iteration.
inline BenchShape memory_shape() { return {1, 8, 16384, 128, false}; }

// GFLOP/s over real time: the counter is the call's FLOP in units of 1e9, and
// kIsIterationInvariantRate (= kIsRate | kIsIterationInvariant) multiplies by
// the iterations and divides by the seconds measured.
inline benchmark::Counter gflops_counter(double flop) {
  return benchmark::Counter(flop * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Iterations for a shape: the memory shape, and anything above `max_flop` for
// a slow computation, runs once; the rest let Google Benchmark decide.
inline void limit_iterations(benchmark::internal::Benchmark* b, const BenchShape& s, double max_flop = 1e300) {
  if (s.l >= memory_shape().l || s.flop() > max_flop) b->Iterations(1);
}

// The process's peak resident memory in MiB (getrusage), for the memory shape.
double max_rss_mib();

}  // namespace attncheck::bench
