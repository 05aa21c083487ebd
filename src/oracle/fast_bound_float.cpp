#include "oracle/fast_bound_float.h"

#include "oracle/simd_native.h"

// Each kernel is a body on S (simd_native.h), compiled into every build by
// run_in_vector_build. The tile and column kernels cover their 16 keys or
// columns in passes of S::kF (one float vector, two double vectors): one pass
// on AVX-512, two on AVX2, four on SSE2, the same arithmetic per lane.

namespace attncheck::oracle_detail {

namespace {

// The body of both logits kernels; KeyTile(t, d, c, k0, k1, ak) loads keys
// [c, c + S::kF) of tile t's row d: as two vectors of doubles, their absolute
// values as one of floats.
template <class S, class KeyTile>
ATTNCHECK_INLINE void logits_tiles(const double* qb, const float* aqb, int64_t D, int64_t n16, int64_t tiles,
                                   double* dot, double* absd, KeyTile key_tile) {
  using V = typename S::d;
  using F = typename S::f;
  constexpr int kW = S::kD;
  static_assert(kTile % S::kF == 0 && kRows == 4, "4 rows x (2 vectors of doubles, 1 of floats) a pass");
  const double lift = float_sum_factor(D), floor = float_underflow(static_cast<double>(D), 0.0);
  for (int64_t t = 0; t < tiles; ++t)
    for (int c = 0; c < kTile; c += S::kF) {  // keys t kTile + [c, c + kF)
      const int64_t j0 = t * kTile + c;
      V s[kRows][2] = {}, a[kRows][2] = {};
      for (int64_t d0 = 0; d0 < D; d0 += kFloatChunk) {
        const int64_t d1 = std::min(D, d0 + kFloatChunk);
        F af[kRows] = {};
        for (int64_t d = d0; d < d1; ++d) {
          V k0, k1;
          F ak;
          key_tile(t, d, c, k0, k1, ak);
          #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
          for (int r = 0; r < kRows; ++r) {
            const V q = S::splat(qb[r * D + d]);
            s[r][0] += q * k0;
            s[r][1] += q * k1;
            af[r] += S::splatf(aqb[r * D + d]) * ak;
          }
        }
        #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
        for (int r = 0; r < kRows; ++r) {
          a[r][0] += S::widen(af[r], 0);
          a[r][1] += S::widen(af[r], 1);
        }
      }
      for (int r = 0; r < kRows; ++r)
        for (int h = 0; h < 2; ++h) {
          S::store(dot + r * n16 + j0 + kW * h, s[r][h]);
          S::store(absd + r * n16 + j0 + kW * h, a[r][h] * lift + floor);
        }
    }
}

}  // namespace

void logits_mixed_kernel(const double* qb, const float* aqb, const double* kt, const float* akt, int64_t D,
                         int64_t n16, int64_t tiles, double* dot, double* absd) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    auto tile = [&](int64_t t, int64_t d, int c, typename S::d& k0, typename S::d& k1, typename S::f& ak)
                    ATTNCHECK_INLINE_LAMBDA {
      const int64_t at = (t * D + d) * kTile + c;  // tile t's row d: contiguous
      k0 = S::load(kt + at);
      k1 = S::load(kt + at + S::kD);
      ak = S::loadf(akt + at);
    };
    logits_tiles<S>(qb, aqb, D, n16, tiles, dot, absd, tile);
  });
}

void logits_float_kernel(const double* qb, const float* aqb, const float* ktf, int64_t D, int64_t n16, int64_t tiles,
                         double* dot, double* absd) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    auto tile = [&](int64_t t, int64_t d, int c, typename S::d& k0, typename S::d& k1, typename S::f& ak)
                    ATTNCHECK_INLINE_LAMBDA {
      const float* kr = ktf + (t * D + d) * kTile + c;
      k0 = S::load_widened(kr);
      k1 = S::load_widened(kr + S::kD);
      ak = S::absf(S::loadf(kr));
    };
    logits_tiles<S>(qb, aqb, D, n16, tiles, dot, absd, tile);
  });
}

void values_float_kernel(const float* vf, int64_t vstride, int64_t c0, const double* w, const float* pw,
                         int64_t stride, int64_t n, double* out, double* sabs) {
  run_in_vector_build([&](auto simd) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(simd)>;
    using V = typename S::d;
    using F = typename S::f;
    constexpr int kW = S::kD;
    static_assert(kCols % S::kF == 0, "whole passes of two double vectors, one of floats");
    for (int c = 0; c < kCols; c += S::kF) {  // columns c0 + [c, c + kF)
      V o[kRows][2] = {}, sa[kRows][2] = {};
      for (int64_t j0 = 0; j0 < n; j0 += kFloatChunk) {
        const int64_t j1 = std::min(n, j0 + kFloatChunk);
        F sf[kRows] = {};
        for (int64_t j = j0; j < j1; ++j) {
          const float* vr = vf + j * vstride + c0 + c;
          const V v0 = S::load_widened(vr), v1 = S::load_widened(vr + kW);  // exact
          const F a = S::absf(S::loadf(vr));
          #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
          for (int r = 0; r < kRows; ++r) {
            const V wr = S::splat(w[r * stride + j]);
            o[r][0] += wr * v0;
            o[r][1] += wr * v1;
            sf[r] += S::splatf(pw[r * stride + j]) * a;
          }
        }
        for (int r = 0; r < kRows; ++r) {
          sa[r][0] += S::widen(sf[r], 0);
          sa[r][1] += S::widen(sf[r], 1);
        }
      }
      for (int r = 0; r < kRows; ++r)
        for (int h = 0; h < 2; ++h) {
          S::store(out + r * kCols + c + kW * h, o[r][h]);
          S::store(sabs + r * kCols + c + kW * h, sa[r][h]);
        }
    }
  });
}

namespace {
// m[kCols / S::kF]: the columns' maxima of |vf| over keys [begin, end), vf [n][kCols].
template <class S>
ATTNCHECK_INLINE void span_max(const float* vf, int64_t begin, int64_t end, typename S::f* m) {
  for (int64_t j = begin; j < end; ++j)
    #pragma GCC unroll 8  // whole: the vectors stay in registers
    for (int p = 0; p < kCols / S::kF; ++p) m[p] = S::maxf(m[p], S::absf(S::loadf(vf + j * kCols + p * S::kF)));
}
template <class S>
ATTNCHECK_INLINE void store_widened(double* out, const typename S::f* m) {
  #pragma GCC unroll 8  // whole: the vectors stay in registers
  for (int p = 0; p < kCols / S::kF; ++p) {
    S::store(out + p * S::kF, S::widen(m[p], 0));
    S::store(out + p * S::kF + S::kD, S::widen(m[p], 1));
  }
}
}  // namespace

void column_max_kernel(const float* vf, int64_t n, float* cmax) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    for (int64_t t = 0; t * kMaxChunk < n; ++t) {
      typename S::f m[kCols / S::kF] = {};
      span_max<S>(vf, t * kMaxChunk, std::min(n, (t + 1) * kMaxChunk), m);
      #pragma GCC unroll 8  // whole: the vectors stay in registers
      for (int p = 0; p < kCols / S::kF; ++p) S::storef(cmax + t * kCols + p * S::kF, m[p]);
    }
  });
}

void range_max_kernel(const float* vf, const float* cmax, int64_t begin, int64_t end, double* out) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    constexpr int kParts = kCols / S::kF;
    typename S::f m[kParts] = {};
    for_max_chunks(
        begin, end, [&](int64_t b, int64_t e) ATTNCHECK_INLINE_LAMBDA { span_max<S>(vf, b, e, m); },
        [&](int64_t t) ATTNCHECK_INLINE_LAMBDA {
          #pragma GCC unroll 8  // whole: the vectors stay in registers
          for (int p = 0; p < kParts; ++p) m[p] = S::maxf(m[p], S::loadf(cmax + t * kCols + p * S::kF));
        });
    store_widened<S>(out, m);
  });
}

void masked_max_kernel(const float* vf, const float* vis, int64_t n, double* out) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    typename S::f m[kCols / S::kF] = {};
    for (int64_t j = 0; j < n; ++j) {
      const typename S::f seen = S::splatf(vis[j]);
      #pragma GCC unroll 8  // whole: the vectors stay in registers
      for (int p = 0; p < kCols / S::kF; ++p)
        m[p] = S::maxf(m[p], seen * S::absf(S::loadf(vf + j * kCols + p * S::kF)));
    }
    store_widened<S>(out, m);
  });
}

namespace {

template <class S, bool kSub16>
ATTNCHECK_INLINE void deviation_float(const float* vf, int64_t vstride, int64_t c0, const double* o, const float* devw,
                                      const float* d16, int64_t stride, int64_t n, double* dev, double* sub16) {
  using F = typename S::f;
  // The double accumulators live in memory: they are touched once a chunk.
  double acc[kRows * kCols] = {}, s16[kRows * kCols] = {};
  for (int c = 0; c < kCols; c += S::kF) {  // columns c0 + [c, c + kF)
    F ov[kRows];
    for (int r = 0; r < kRows; ++r) {
      float of[S::kF];
      for (int l = 0; l < S::kF; ++l) of[l] = static_cast<float>(o[r * kCols + c + l]);
      ov[r] = S::loadf(of);
    }
    for (int64_t j0 = 0; j0 < n; j0 += kFloatChunk) {
      const int64_t j1 = std::min(n, j0 + kFloatChunk);
      F fdev[kRows] = {}, f16[kRows] = {};
      for (int64_t j = j0; j < j1; ++j) {
        const F vv = S::loadf(vf + j * vstride + c0 + c);
        #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
        for (int r = 0; r < kRows; ++r) {
          const F sp = S::absf(vv - ov[r]);
          fdev[r] += S::splatf(devw[r * stride + j]) * sp;
          if constexpr (kSub16) f16[r] += S::splatf(d16[r * stride + j]) * S::maxf(S::absf(vv), sp);
        }
      }
      for (int r = 0; r < kRows; ++r)
        for (int h = 0; h < 2; ++h) {
          double* at = &acc[r * kCols + c + S::kD * h];
          S::store(at, S::load(at) + S::widen(fdev[r], h));
          if constexpr (kSub16) {
            at = &s16[r * kCols + c + S::kD * h];
            S::store(at, S::load(at) + S::widen(f16[r], h));
          }
        }
    }
  }
  for (int k = 0; k < kRows * kCols; ++k) {
    dev[k] = acc[k];
    sub16[k] = s16[k];
  }
}

}  // namespace

void deviation_float_kernel(const float* vf, int64_t vstride, int64_t c0, const double* o, const float* devw,
                            const float* d16, int64_t stride, int64_t n, double* dev, double* sub16) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    if (d16) deviation_float<S, true>(vf, vstride, c0, o, devw, d16, stride, n, dev, sub16);
    else deviation_float<S, false>(vf, vstride, c0, o, devw, d16, stride, n, dev, sub16);
  });
}

void to_float_kernel(const double* x, float* y, int64_t n) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    int64_t j = 0;
    for (; j + S::kD <= n; j += S::kD) S::store_narrowed(y + j, S::load(x + j));
    for (; j < n; ++j) y[j] = static_cast<float>(x[j]);
  });
}

}  // namespace attncheck::oracle_detail
