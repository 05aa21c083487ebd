// Inputs for the attncheck-side benchmarks: a Problem of a BenchShape with
// unit Gaussian tensors (exactly representable in its dtype), and its tensors
// as the raw f32/f64 buffers an ABI forward function reads.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "bench_shapes.h"
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

// The problem's tensors in T, and an output buffer, behind one attncheck_call.
template <class T>
struct RawCall {
  std::vector<T> q, k, v, out;
  attncheck_call call{};

  explicit RawCall(const Problem& p)
      : q(p.q.begin(), p.q.end()), k(p.k.begin(), p.k.end()), v(p.v.begin(), p.v.end()),
        out(static_cast<std::size_t>(p.shape.out_size())) {
    const Shape& s = p.shape;
    call.dtype = sizeof(T) == 4 ? ATTNCHECK_F32 : ATTNCHECK_F64;
    call.batch = s.batch;
    call.heads = s.heads;
    call.q_len = s.q_len;
    call.kv_len = s.kv_len;
    call.head_dim = s.head_dim;
    call.value_dim = s.value_dim;
    call.causal = static_cast<attncheck_causal>(p.causal);
    call.scale = p.scale;
    call.q = q.data();
    call.k = k.data();
    call.v = v.data();
    call.mask = nullptr;
    call.out = out.data();
  }
  RawCall(const RawCall&) = delete;  // call points into this object's vectors
  RawCall& operator=(const RawCall&) = delete;
};

}  // namespace attncheck::bench
