#include "oracle/fast_bound_float.h"

#include "oracle/simd_clones.h"
#include "oracle/simd_v16f.h"
#include "oracle/simd_v8d.h"

namespace attncheck::oracle_detail {

namespace {

// The body of both logits kernels; KeyTile(t, d, k0, k1, ak) loads tile t's row d:
// keys as two vectors of 8 doubles, their absolute values as 16 floats.
template <class KeyTile>
__attribute__((always_inline)) inline void logits_tiles(const double* qb, const float* aqb, int64_t D, int64_t n16,
                                                        int64_t tiles, double* dot, double* absd, KeyTile key_tile) {
  static_assert(kTile == 16 && kRows == 4, "the kernel holds 4 rows x (2 vectors of 8 keys, 1 of 16)");
  const double lift = float_sum_factor(D), floor = float_underflow(static_cast<double>(D), 0.0);
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t j0 = t * kTile;
    v8d s[kRows][2] = {}, a[kRows][2] = {};
    for (int64_t d0 = 0; d0 < D; d0 += kFloatChunk) {
      const int64_t d1 = std::min(D, d0 + kFloatChunk);
      v16f af[kRows] = {};
      for (int64_t d = d0; d < d1; ++d) {
        v8d k0, k1;
        v16f ak;
        key_tile(t, d, k0, k1, ak);
        #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
        for (int r = 0; r < kRows; ++r) {
          const v8d q = splat8(qb[r * D + d]);
          s[r][0] += q * k0;
          s[r][1] += q * k1;
          af[r] += splat16f(aqb[r * D + d]) * ak;
        }
      }
      #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
      for (int r = 0; r < kRows; ++r) {
        a[r][0] += widen8(af[r], 0);
        a[r][1] += widen8(af[r], 1);
      }
    }
    for (int r = 0; r < kRows; ++r) {
      store8(dot + r * n16 + j0, s[r][0]);
      store8(dot + r * n16 + j0 + 8, s[r][1]);
      store8(absd + r * n16 + j0, a[r][0] * lift + floor);
      store8(absd + r * n16 + j0 + 8, a[r][1] * lift + floor);
    }
  }
}

}  // namespace

ATTNCHECK_SIMD_CLONES
void logits_mixed_kernel(const double* qb, const float* aqb, const double* kt, const float* akt, int64_t D,
                         int64_t n16, int64_t tiles, double* dot, double* absd) {
  auto tile = [&](int64_t t, int64_t d, v8d& k0, v8d& k1, v16f& ak) __attribute__((always_inline)) {
    const double* kr = kt + (t * D + d) * kTile;  // tile t's row d: contiguous
    k0 = load8(kr);
    k1 = load8(kr + 8);
    ak = load16f(akt + (t * D + d) * kTile);
  };
  logits_tiles(qb, aqb, D, n16, tiles, dot, absd, tile);
}

ATTNCHECK_SIMD_CLONES
void logits_float_kernel(const double* qb, const float* aqb, const float* ktf, int64_t D, int64_t n16, int64_t tiles,
                         double* dot, double* absd) {
  auto tile = [&](int64_t t, int64_t d, v8d& k0, v8d& k1, v16f& ak) __attribute__((always_inline)) {
    const float* kr = ktf + (t * D + d) * kTile;
    k0 = load8f_widened(kr);
    k1 = load8f_widened(kr + 8);
    ak = abs16f(load16f(kr));
  };
  logits_tiles(qb, aqb, D, n16, tiles, dot, absd, tile);
}

ATTNCHECK_SIMD_CLONES
void values_float_kernel(const float* vf, int64_t vstride, int64_t c0, const double* w, const float* pw,
                         int64_t stride, int64_t n, double* out, double* sabs) {
  static_assert(kCols == 16, "two vectors of 8 double columns, one of 16 float columns");
  v8d o[kRows][2] = {}, sa[kRows][2] = {};
  for (int64_t j0 = 0; j0 < n; j0 += kFloatChunk) {
    const int64_t j1 = std::min(n, j0 + kFloatChunk);
    v16f sf[kRows] = {};
    for (int64_t j = j0; j < j1; ++j) {
      const float* vr = vf + j * vstride + c0;
      const v8d v0 = load8f_widened(vr), v1 = load8f_widened(vr + 8);  // exact
      const v16f a = abs16f(load16f(vr));
      #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
      for (int r = 0; r < kRows; ++r) {
        const v8d wr = splat8(w[r * stride + j]);
        o[r][0] += wr * v0;
        o[r][1] += wr * v1;
        sf[r] += splat16f(pw[r * stride + j]) * a;
      }
    }
    for (int r = 0; r < kRows; ++r) {
      sa[r][0] += widen8(sf[r], 0);
      sa[r][1] += widen8(sf[r], 1);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < 2; ++h) {
      store8(out + r * kCols + 8 * h, o[r][h]);
      store8(sabs + r * kCols + 8 * h, sa[r][h]);
    }
}

namespace {
__attribute__((always_inline)) inline v16f span_max(const float* vf, int64_t begin, int64_t end, v16f m) {
  for (int64_t j = begin; j < end; ++j) m = max16f(m, abs16f(load16f(vf + j * kCols)));
  return m;
}
__attribute__((always_inline)) inline void store_widened(double* out, v16f m) {
  store8(out, widen8(m, 0));
  store8(out + 8, widen8(m, 1));
}
}  // namespace

ATTNCHECK_SIMD_CLONES
void column_max_kernel(const float* vf, int64_t n, float* cmax) {
  for (int64_t t = 0; t * kMaxChunk < n; ++t) {
    const v16f m = span_max(vf, t * kMaxChunk, std::min(n, (t + 1) * kMaxChunk), v16f{});
    std::memcpy(cmax + t * kCols, &m, sizeof m);
  }
}

ATTNCHECK_SIMD_CLONES
void range_max_kernel(const float* vf, const float* cmax, int64_t begin, int64_t end, double* out) {
  v16f m = {};
  const int64_t first = (begin + kMaxChunk - 1) / kMaxChunk, last = end / kMaxChunk;  // whole blocks [first, last)
  if (first >= last) {
    m = span_max(vf, begin, end, m);
  } else {
    m = span_max(vf, begin, first * kMaxChunk, m);
    for (int64_t t = first; t < last; ++t) m = max16f(m, load16f(cmax + t * kCols));
    m = span_max(vf, last * kMaxChunk, end, m);
  }
  store_widened(out, m);
}

ATTNCHECK_SIMD_CLONES
void masked_max_kernel(const float* vf, const float* vis, int64_t n, double* out) {
  v16f m = {};
  for (int64_t j = 0; j < n; ++j) m = max16f(m, splat16f(vis[j]) * abs16f(load16f(vf + j * kCols)));
  store_widened(out, m);
}

namespace {

// Inlined into each clone of deviation_float_kernel, so it is compiled for that clone's ISA.
template <bool kSub16>
__attribute__((always_inline)) inline void deviation_float(const float* vf, int64_t vstride, int64_t c0,
                                                           const double* o, const float* devw, const float* d16,
                                                           int64_t stride, int64_t n, double* dev, double* sub16) {
  v16f ov[kRows];
  for (int r = 0; r < kRows; ++r) {
    float of[kCols];
    for (int l = 0; l < kCols; ++l) of[l] = static_cast<float>(o[r * kCols + l]);
    ov[r] = load16f(of);
  }
  // The double accumulators live in memory: they are touched once a chunk.
  double acc[kRows * kCols] = {}, s16[kRows * kCols] = {};
  for (int64_t j0 = 0; j0 < n; j0 += kFloatChunk) {
    const int64_t j1 = std::min(n, j0 + kFloatChunk);
    v16f fdev[kRows] = {}, f16[kRows] = {};
    for (int64_t j = j0; j < j1; ++j) {
      const v16f vv = load16f(vf + j * vstride + c0);
      #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
      for (int r = 0; r < kRows; ++r) {
        const v16f sp = abs16f(vv - ov[r]);
        fdev[r] += splat16f(devw[r * stride + j]) * sp;
        if constexpr (kSub16) f16[r] += splat16f(d16[r * stride + j]) * max16f(abs16f(vv), sp);
      }
    }
    for (int r = 0; r < kRows; ++r)
      for (int h = 0; h < 2; ++h) {
        double* at = &acc[r * kCols + 8 * h];
        store8(at, load8(at) + widen8(fdev[r], h));
        if constexpr (kSub16) {
          at = &s16[r * kCols + 8 * h];
          store8(at, load8(at) + widen8(f16[r], h));
        }
      }
  }
  for (int k = 0; k < kRows * kCols; ++k) {
    dev[k] = acc[k];
    sub16[k] = s16[k];
  }
}

}  // namespace

ATTNCHECK_SIMD_CLONES
void deviation_float_kernel(const float* vf, int64_t vstride, int64_t c0, const double* o, const float* devw,
                            const float* d16, int64_t stride, int64_t n, double* dev, double* sub16) {
  if (d16) deviation_float<true>(vf, vstride, c0, o, devw, d16, stride, n, dev, sub16);
  else deviation_float<false>(vf, vstride, c0, o, devw, d16, stride, n, dev, sub16);
}

ATTNCHECK_SIMD_CLONES
void to_float_kernel(const double* x, float* y, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const v8f f = narrow8(load8(x + j));
    std::memcpy(y + j, &f, sizeof f);
  }
  for (; j < n; ++j) y[j] = static_cast<float>(x[j]);
}

}  // namespace attncheck::oracle_detail
