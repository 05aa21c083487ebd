// Inputs for the attncheck-side benchmarks: a Problem of a BenchShape with
// unit Gaussian tensors (exactly representable in its dtype), and its tensors
// as the raw f32/f64 buffers an ABI forward function reads.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <vector>

#include "bench_shapes.h"
#include "call/call_layout.h"
#include "problem/problem.h"

namespace attncheck::bench {

inline Shape shape_of(const BenchShape& s) { return {s.b, s.h, s.l, s.l, s.d, s.d}; }

// q, k, v ~ N(0, 1) rounded to `dtype`, no mask, causal TOP_LEFT if asked, default scale.
inline Problem gaussian_problem(DType dtype, const BenchShape& s, uint64_t seed = 42) {
  Problem p = make_problem(dtype, shape_of(s), s.causal ? Causal::top_left : Causal::none);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  for (std::vector<double>* t : {&p.q, &p.k, &p.v})
    for (double& x : *t) x = normal(rng);
  round_tensors(p);
  return p;
}

// The problem encoded once as the checker lays out a call (call/call_layout.h),
// behind one attncheck_call the benchmark reuses.
struct EncodedCall {
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  CallLayout layout;
  std::unique_ptr<uint8_t, Free> region;
  attncheck_call call{};

  explicit EncodedCall(const Problem& p)
      : layout(layout_for(p)),
        region(static_cast<uint8_t*>(std::aligned_alloc(CallLayout::kAlign, layout.total))) {
    if (!region) throw std::bad_alloc();
    encode_call(p, layout, region.get());
    call = abi_call(p, layout, region.get());
  }
};

}  // namespace attncheck::bench
