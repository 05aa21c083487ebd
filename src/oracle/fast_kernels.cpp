#include "oracle/fast_kernels.h"

#include <algorithm>
#include <cmath>

#include "oracle/simd_native.h"

// Each kernel is a body on S (simd_native.h), compiled into every build by
// run_in_vector_build. The column kernels cover their kCols columns in passes
// of 2 S::kD columns (one pass on AVX-512, two on AVX2, four on SSE2), each
// with the same accumulators per row; a column's arithmetic is the same in
// every pass layout. The per-key loops keep kLanes = 8 lanes of partial sums
// (8 / S::kD vectors) and reduce them in lane order, so the AVX-512 and AVX2
// builds give the same bits.

namespace attncheck::oracle_detail {

namespace {

// kOut, kMax: out, vmax are asked for.
template <class S, bool kOut, bool kMax>
ATTNCHECK_INLINE void values(const double* v, int64_t vstride, int64_t c0, const double* w, const double* pw,
                             const double* vis, int64_t stride, int64_t n, double* out, double* sabs, double* vmax) {
  using V = typename S::d;
  constexpr int kW = S::kD;
  static_assert(kCols % (2 * kW) == 0, "whole passes of two vectors");
  for (int c = 0; c < kCols; c += 2 * kW) {  // columns c0 + [c, c + 2 kW)
    V o[kRows][2] = {}, sa[kRows][2] = {}, vm[kRows][2] = {};
    for (int64_t j = 0; j < n; ++j) {
      const double* vr = v + j * vstride + c0 + c;
      const V v0 = S::load(vr), v1 = S::load(vr + kW);
      const V a0 = S::abs(v0), a1 = S::abs(v1);
      #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
      for (int r = 0; r < kRows; ++r) {
        const V pr = S::splat(pw[r * stride + j]);
        if constexpr (kOut) {
          const V wr = S::splat(w[r * stride + j]);
          o[r][0] += wr * v0;
          o[r][1] += wr * v1;
        }
        sa[r][0] += pr * a0;
        sa[r][1] += pr * a1;
        if constexpr (kMax) {
          const V seen = S::splat(vis[r * stride + j]);
          vm[r][0] = S::max(vm[r][0], seen * a0);
          vm[r][1] = S::max(vm[r][1], seen * a1);
        }
      }
    }
    for (int r = 0; r < kRows; ++r)
      for (int h = 0; h < 2; ++h) {
        const int64_t at = r * kCols + c + kW * h;
        if constexpr (kOut) S::store(out + at, o[r][h]);
        S::store(sabs + at, sa[r][h]);
        if constexpr (kMax) S::store(vmax + at, vm[r][h]);
      }
  }
}

}  // namespace

void values_kernel(const double* v, int64_t vstride, int64_t c0, const double* w, const double* pw, const double* vis,
                   int64_t stride, int64_t n, double* out, double* sabs, double* vmax) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    if (out && vmax) values<S, true, true>(v, vstride, c0, w, pw, vis, stride, n, out, sabs, vmax);
    else if (out) values<S, true, false>(v, vstride, c0, w, pw, vis, stride, n, out, sabs, vmax);
    else if (vmax) values<S, false, true>(v, vstride, c0, w, pw, vis, stride, n, out, sabs, vmax);
    else values<S, false, false>(v, vstride, c0, w, pw, vis, stride, n, out, sabs, vmax);
  });
}

namespace {
// m[kCols / S::kD]: the columns' maxima of |v| over keys [begin, end), v [n][kCols].
template <class S>
ATTNCHECK_INLINE void span_max_d(const double* v, int64_t begin, int64_t end, typename S::d* m) {
  for (int64_t j = begin; j < end; ++j)
    #pragma GCC unroll 8  // whole: the vectors stay in registers
    for (int p = 0; p < kCols / S::kD; ++p) m[p] = S::max(m[p], S::abs(S::load(v + j * kCols + p * S::kD)));
}
}  // namespace

void column_max_kernel_d(const double* v, int64_t n, double* cmax) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    for (int64_t t = 0; t * kMaxChunk < n; ++t) {
      typename S::d m[kCols / S::kD] = {};
      span_max_d<S>(v, t * kMaxChunk, std::min(n, (t + 1) * kMaxChunk), m);
      #pragma GCC unroll 8  // whole: the vectors stay in registers
      for (int p = 0; p < kCols / S::kD; ++p) S::store(cmax + t * kCols + p * S::kD, m[p]);
    }
  });
}

void range_max_kernel_d(const double* v, const double* cmax, int64_t begin, int64_t end, double* out) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    constexpr int kParts = kCols / S::kD;
    typename S::d m[kParts] = {};
    for_max_chunks(
        begin, end, [&](int64_t b, int64_t e) ATTNCHECK_INLINE_LAMBDA { span_max_d<S>(v, b, e, m); },
        [&](int64_t t) ATTNCHECK_INLINE_LAMBDA {
          #pragma GCC unroll 8  // whole: the vectors stay in registers
          for (int p = 0; p < kParts; ++p) m[p] = S::max(m[p], S::load(cmax + t * kCols + p * S::kD));
        });
    #pragma GCC unroll 8  // whole: the vectors stay in registers
    for (int p = 0; p < kParts; ++p) S::store(out + p * S::kD, m[p]);
  });
}

namespace {

template <class S, bool kSub16>
ATTNCHECK_INLINE void deviation(const double* v, int64_t vstride, int64_t c0, const double* o, const double* devw,
                                const double* d16, int64_t stride, int64_t n, double* dev, double* sub16) {
  using V = typename S::d;
  constexpr int kW = S::kD;
  for (int c = 0; c < kCols; c += 2 * kW) {  // columns c0 + [c, c + 2 kW), as values()
    V ov[kRows][2], acc[kRows][2] = {}, s16[kRows][2] = {};
    for (int r = 0; r < kRows; ++r)
      for (int h = 0; h < 2; ++h) ov[r][h] = S::load(o + r * kCols + c + kW * h);
    for (int64_t j = 0; j < n; ++j) {
      const double* vr = v + j * vstride + c0 + c;
      const V v0 = S::load(vr), v1 = S::load(vr + kW);
      #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
      for (int r = 0; r < kRows; ++r) {
        const V a = S::splat(devw[r * stride + j]);
        const V sp0 = S::abs(v0 - ov[r][0]), sp1 = S::abs(v1 - ov[r][1]);
        acc[r][0] += a * sp0;
        acc[r][1] += a * sp1;
        if constexpr (kSub16) {
          const V dd = S::splat(d16[r * stride + j]);
          s16[r][0] += dd * S::max(S::abs(v0), sp0);
          s16[r][1] += dd * S::max(S::abs(v1), sp1);
        }
      }
    }
    for (int r = 0; r < kRows; ++r)
      for (int h = 0; h < 2; ++h) {
        S::store(dev + r * kCols + c + kW * h, acc[r][h]);
        S::store(sub16 + r * kCols + c + kW * h, s16[r][h]);
      }
  }
}

}  // namespace

void deviation_kernel(const double* v, int64_t vstride, int64_t c0, const double* o, const double* devw,
                      const double* d16, int64_t stride, int64_t n, double* dev, double* sub16) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    if (d16) deviation<S, true>(v, vstride, c0, o, devw, d16, stride, n, dev, sub16);
    else deviation<S, false>(v, vstride, c0, o, devw, d16, stride, n, dev, sub16);
  });
}

double lane_sum(const double* x, int64_t n) {
  return run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    typename S::d acc[kLanes / S::kD] = {};
    int64_t t = 0;
    for (; t + kLanes <= n; t += kLanes)
      #pragma GCC unroll 8  // whole: the vectors stay in registers
      for (int p = 0; p < kLanes / S::kD; ++p) acc[p] += S::load(x + t + p * S::kD);
    double total = 0;
    for (; t < n; ++t) total += x[t];
    double lanes[kLanes];
    spill_lanes<S>(acc, lanes);
    for (int l = 0; l < kLanes; ++l) total += lanes[l];
    return total;
  });
}

namespace {
template <class V>
ATTNCHECK_INLINE V expm1_up_v(V g) {
  return g + g * g / (2.0 * (1.0 - g / 3.0));
}
template <class V>
ATTNCHECK_INLINE V one_minus_exp_neg_up_v(V g) {
  return g * (1.0 - g / 2.0 * (1.0 - g / 3.0));
}
}  // namespace

double scale_logits_kernel(double* dot, double* absd, const double* vis, double scale, int64_t n) {
  return run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    using V = typename S::d;
    const V sc = S::splat(scale), asc = S::abs(sc), neg_inf = S::splat(-__builtin_inf());
    V m[kLanes / S::kD];
    for (auto& x : m) x = neg_inf;
    for (int64_t j0 = 0; j0 < n; j0 += kLanes)
      #pragma GCC unroll 8  // whole: the vectors stay in registers
      for (int p = 0; p < kLanes / S::kD; ++p) {
        const int64_t j = j0 + p * S::kD;
        const V sv = sc * S::load(dot + j);
        S::store(dot + j, sv);
        S::store(absd + j, asc * S::load(absd + j));
        m[p] = S::max(m[p], S::load(vis + j) > 0 ? sv : neg_inf);
      }
    return lanes_max<S>(m);
  });
}

void logit_maxima_kernel(const double* dot, const double* a, double rounding, int64_t n, double& raw, double& stored) {
  run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    using V = typename S::d;
    const V lr = S::splat(rounding);
    V r[kLanes / S::kD] = {}, st[kLanes / S::kD] = {};
    int64_t j0 = 0;
    for (; j0 + kLanes <= n; j0 += kLanes)
      #pragma GCC unroll 8  // whole: the vectors stay in registers
      for (int p = 0; p < kLanes / S::kD; ++p) {
        const int64_t j = j0 + p * S::kD;
        const V av = S::load(a + j);
        r[p] = S::max(r[p], av);
        st[p] = S::max(st[p], S::abs(S::load(dot + j)) + lr * av);
      }
    double rm = lanes_max<S>(r), sm = lanes_max<S>(st);
    for (int64_t j = j0; j < n; ++j) {
      rm = std::max(rm, a[j]);
      sm = std::max(sm, std::abs(dot[j]) + rounding * a[j]);
    }
    raw = rm;
    stored = sm;
  });
}

double masked_sum_kernel(double* w, const double* vis, int64_t n) {
  return run_in_vector_build([&](auto s) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(s)>;
    using V = typename S::d;
    V acc[kLanes / S::kD] = {};
    for (int64_t j0 = 0; j0 < n; j0 += kLanes)
      #pragma GCC unroll 8  // whole: the vectors stay in registers
      for (int p = 0; p < kLanes / S::kD; ++p) {
        const int64_t j = j0 + p * S::kD;
        const V wv = S::load(w + j) * S::load(vis + j);
        S::store(w + j, wv);
        acc[p] += wv;
      }
    return lanes_sum<S>(acc);
  });
}

RowErrorSums row_errors_kernel(const LogitErrorTerms& dt, const LogitErrorTerms& orc, const double* s, const double* a,
                               const double* x, const double* w, const double* vis, const double* ksum,
                               const double* x_dt, const double* x_or, double total, double* p, double* e_dt,
                               double* e_or, int64_t n) {
  return run_in_vector_build([&](auto simd) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(simd)>;
    using V = typename S::d;
    constexpr int kParts = kLanes / S::kD;
    const double log_total = __builtin_log(total);
    const V tot = S::splat(total), lt = S::splat(log_total);
    const V g_dt = S::splat(dt.gamma_d3), u_dt = S::splat(dt.u), xe_dt = S::splat(dt.exp_err), u16 = S::splat(dt.u16);
    const V ftz = S::splat(dt.ftz_scale), qsum = S::splat(dt.qsum);
    const V g_or = S::splat(orc.gamma_d3), u_or = S::splat(orc.u), xe_or = S::splat(orc.exp_err);
    V ent[kParts] = {}, emax[kParts] = {}, ydt[kParts] = {}, yor[kParts] = {};
    for (int64_t j0 = 0; j0 < n; j0 += kLanes)
      #pragma GCC unroll 8  // whole: the vectors stay in registers
      for (int q = 0; q < kParts; ++q) {
        const int64_t j = j0 + q * S::kD;
        const V sv = S::load(s + j), av = S::load(a + j), xv = S::load(x + j), seen = S::load(vis + j);
        const V pj = S::load(w + j) / tot;
        S::store(p + j, pj);
        ent[q] -= pj * (xv - lt);
        const V ax = S::abs(xv);
        // logit_error (bound_arithmetic.h): dot product and scale, max subtraction, exp, 16-bit storage, flush to zero.
        // 0 for hidden keys: their error may be huge (|k| near the domain's edge,
        // allowed for hidden keys; sum_d |k_jd| may even overflow, and 0 * inf is
        // NaN), and expm1_up_v of it inf / inf = NaN even where p_j = 0.
        // The flush term 0 where nothing scales (scale 0): sum_d |k_jd| may be inf.
        const V zero = {};
        const V flush = ftz > zero ? ftz * (qsum + S::load(ksum + j)) : zero;
        const V ed = seen > zero ? g_dt * av + u_dt * ax + xe_dt + u16 * (S::abs(sv) + ax + 1) + flush +
                                       S::load(x_dt + j)
                                 : zero;
        const V eo = seen > zero ? g_or * av + u_or * ax + xe_or + S::load(x_or + j) : zero;
        S::store(e_dt + j, ed);
        S::store(e_or + j, eo);
        emax[q] = S::max(emax[q], ed);
        ydt[q] += pj * expm1_up_v(ed);
        yor[q] += pj * expm1_up_v(eo);
      }
    RowErrorSums r;
    r.entropy = lanes_sum<S>(ent);
    r.e_max = lanes_max<S>(emax);
    r.y_dt = lanes_sum<S>(ydt);
    r.y_or = lanes_sum<S>(yor);
    return r;
  });
}

bool row_shifts_kernel(const double* p, const double* e_dt, const double* e_or, const double* vis, double E_dt,
                       double E_or, double weight_floor, double weight_step, double total, double safety, double* devw,
                       double* pw, double* d16, int64_t n) {
  return run_in_vector_build([&](auto simd) ATTNCHECK_INLINE_LAMBDA {
    using S = SimdOf<decltype(simd)>;
    using V = typename S::d;
    const V Ed = S::splat(E_dt), Eo = S::splat(E_or), floor = S::splat(kWeightFloor), one = S::splat(1.0), zero = {};
    const V sf = S::splat(safety);
    const V wf = S::splat(weight_floor), ws = S::splat(weight_step), tot = S::splat(total),
            wf_l = S::splat(weight_floor / total);
    V below = {};
    for (int64_t j = 0; j < n; j += S::kD) {
      const V pj = S::load(p + j), seen = S::load(vis + j);
      const V pf = S::max(pj, floor);
      const V gd = S::load(e_dt + j) + Ed, go = S::load(e_or + j) + Eo;
      const V sd = seen * S::max(S::min(one - pj, pf * expm1_up_v(gd)), pf * one_minus_exp_neg_up_v(gd));
      const V so = seen * S::max(S::min(one - pj, pf * expm1_up_v(go)), pf * one_minus_exp_neg_up_v(go));
      S::store(devw + j, sf * sd + so);
      S::store(pw + j, pj + sd);
      if (weight_floor > 0) {
        // A weight that may be stored below the 16-bit format's smallest normal (careful_row).
        const V lo = pj - sd, hi = pj + sd;
        V d = lo < wf ? ws : zero;
        d = lo * tot < wf ? S::max(d, S::min(hi, wf_l)) : d;
        d *= seen;
        S::store(d16 + j, d);
        below = S::max(below, d);
      }
    }
    bool any = false;
    for (int l = 0; l < S::kD; ++l) any |= below[l] > 0;
    return any;
  });
}

}  // namespace attncheck::oracle_detail
