#include "oracle/fast_kernels.h"

#include <algorithm>
#include <cmath>

#include "oracle/simd_clones.h"
#include "oracle/simd_v8d.h"

namespace attncheck::oracle_detail {

namespace {

// Inlined into each clone of values_kernel; kOut, kMax: out, vmax are asked for.
template <bool kOut, bool kMax>
__attribute__((always_inline)) inline void values(const double* v, int64_t vstride, int64_t c0, const double* w,
                                                  const double* pw, const double* vis, int64_t stride, int64_t n,
                                                  double* out, double* sabs, double* vmax) {
  static_assert(kCols == 16, "two vectors of 8 columns");
  v8d o[kRows][2] = {}, sa[kRows][2] = {}, vm[kRows][2] = {};
  for (int64_t j = 0; j < n; ++j) {
    const double* vr = v + j * vstride + c0;
    const v8d v0 = load8(vr), v1 = load8(vr + 8);
    const v8d a0 = abs8(v0), a1 = abs8(v1);
    #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
    for (int r = 0; r < kRows; ++r) {
      const v8d pr = splat8(pw[r * stride + j]);
      if constexpr (kOut) {
        const v8d wr = splat8(w[r * stride + j]);
        o[r][0] += wr * v0;
        o[r][1] += wr * v1;
      }
      sa[r][0] += pr * a0;
      sa[r][1] += pr * a1;
      if constexpr (kMax) {
        const v8d seen = splat8(vis[r * stride + j]);
        vm[r][0] = max8(vm[r][0], seen * a0);
        vm[r][1] = max8(vm[r][1], seen * a1);
      }
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < 2; ++h) {
      if constexpr (kOut) store8(out + r * kCols + 8 * h, o[r][h]);
      store8(sabs + r * kCols + 8 * h, sa[r][h]);
      if constexpr (kMax) store8(vmax + r * kCols + 8 * h, vm[r][h]);
    }
}

}  // namespace

ATTNCHECK_SIMD_CLONES
void values_kernel(const double* v, int64_t vstride, int64_t c0, const double* w, const double* pw, const double* vis,
                   int64_t stride, int64_t n, double* out, double* sabs, double* vmax) {
  if (out && vmax) values<true, true>(v, vstride, c0, w, pw, vis, stride, n, out, sabs, vmax);
  else if (out) values<true, false>(v, vstride, c0, w, pw, vis, stride, n, out, sabs, vmax);
  else if (vmax) values<false, true>(v, vstride, c0, w, pw, vis, stride, n, out, sabs, vmax);
  else values<false, false>(v, vstride, c0, w, pw, vis, stride, n, out, sabs, vmax);
}

namespace {
__attribute__((always_inline)) inline void span_max_d(const double* v, int64_t begin, int64_t end, v8d& m0, v8d& m1) {
  for (int64_t j = begin; j < end; ++j) {
    m0 = max8(m0, abs8(load8(v + j * kCols)));
    m1 = max8(m1, abs8(load8(v + j * kCols + 8)));
  }
}
}  // namespace

ATTNCHECK_SIMD_CLONES
void column_max_kernel_d(const double* v, int64_t n, double* cmax) {
  static_assert(kCols == 16, "two vectors of 8 columns");
  for (int64_t t = 0; t * kMaxChunk < n; ++t) {
    v8d m0 = {}, m1 = {};
    span_max_d(v, t * kMaxChunk, std::min(n, (t + 1) * kMaxChunk), m0, m1);
    store8(cmax + t * kCols, m0);
    store8(cmax + t * kCols + 8, m1);
  }
}

ATTNCHECK_SIMD_CLONES
void range_max_kernel_d(const double* v, const double* cmax, int64_t begin, int64_t end, double* out) {
  v8d m0 = {}, m1 = {};
  const int64_t first = (begin + kMaxChunk - 1) / kMaxChunk, last = end / kMaxChunk;  // whole blocks [first, last)
  if (first >= last) {
    span_max_d(v, begin, end, m0, m1);
  } else {
    span_max_d(v, begin, first * kMaxChunk, m0, m1);
    for (int64_t t = first; t < last; ++t) {
      m0 = max8(m0, load8(cmax + t * kCols));
      m1 = max8(m1, load8(cmax + t * kCols + 8));
    }
    span_max_d(v, last * kMaxChunk, end, m0, m1);
  }
  store8(out, m0);
  store8(out + 8, m1);
}

namespace {

// Inlined into each clone of deviation_kernel, so it is compiled for that clone's ISA.
template <bool kSub16>
__attribute__((always_inline)) inline void deviation(const double* v, int64_t vstride, int64_t c0, const double* o,
                                                     const double* devw, const double* d16, int64_t stride, int64_t n,
                                                     double* dev, double* sub16) {
  v8d ov[kRows][2], acc[kRows][2] = {}, s16[kRows][2] = {};
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < 2; ++h) ov[r][h] = load8(o + r * kCols + 8 * h);
  for (int64_t j = 0; j < n; ++j) {
    const double* vr = v + j * vstride + c0;
    const v8d v0 = load8(vr), v1 = load8(vr + 8);
    #pragma GCC unroll 4  // accumulators in registers (fast_kernels_f64.cpp)
    for (int r = 0; r < kRows; ++r) {
      const v8d a = splat8(devw[r * stride + j]);
      const v8d sp0 = abs8(v0 - ov[r][0]), sp1 = abs8(v1 - ov[r][1]);
      acc[r][0] += a * sp0;
      acc[r][1] += a * sp1;
      if constexpr (kSub16) {
        const v8d dd = splat8(d16[r * stride + j]);
        s16[r][0] += dd * max8(abs8(v0), sp0);
        s16[r][1] += dd * max8(abs8(v1), sp1);
      }
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int h = 0; h < 2; ++h) {
      store8(dev + r * kCols + 8 * h, acc[r][h]);
      store8(sub16 + r * kCols + 8 * h, s16[r][h]);
    }
}

}  // namespace

ATTNCHECK_SIMD_CLONES
void deviation_kernel(const double* v, int64_t vstride, int64_t c0, const double* o, const double* devw,
                      const double* d16, int64_t stride, int64_t n, double* dev, double* sub16) {
  if (d16) deviation<true>(v, vstride, c0, o, devw, d16, stride, n, dev, sub16);
  else deviation<false>(v, vstride, c0, o, devw, d16, stride, n, dev, sub16);
}

ATTNCHECK_SIMD_CLONES
double lane_sum(const double* x, int64_t n) {
  v8d acc = {};
  int64_t t = 0;
  for (; t + 8 <= n; t += 8) acc += load8(x + t);
  double total = 0;
  for (; t < n; ++t) total += x[t];
  for (int l = 0; l < 8; ++l) total += acc[l];
  return total;
}

namespace {
__attribute__((always_inline)) inline v8d expm1_up8(v8d g) { return g + g * g / (2.0 * (1.0 - g / 3.0)); }
__attribute__((always_inline)) inline v8d one_minus_exp_neg_up8(v8d g) { return g * (1.0 - g / 2.0 * (1.0 - g / 3.0)); }
__attribute__((always_inline)) inline double hmax(v8d v) {
  double m = v[0];
  for (int l = 1; l < 8; ++l) m = v[l] > m ? v[l] : m;
  return m;
}
__attribute__((always_inline)) inline double hsum(v8d v) {
  double s = 0;
  for (int l = 0; l < 8; ++l) s += v[l];
  return s;
}
}  // namespace

ATTNCHECK_SIMD_CLONES
double scale_logits_kernel(double* dot, double* absd, const double* vis, double scale, int64_t n) {
  const v8d sc = splat8(scale), asc = abs8(sc), neg_inf = splat8(-__builtin_inf());
  v8d m = neg_inf;
  for (int64_t j = 0; j < n; j += 8) {
    const v8d s = sc * load8(dot + j);
    store8(dot + j, s);
    store8(absd + j, asc * load8(absd + j));
    m = max8(m, load8(vis + j) > 0 ? s : neg_inf);
  }
  return hmax(m);
}

ATTNCHECK_SIMD_CLONES
void logit_maxima_kernel(const double* dot, const double* a, double rounding, int64_t n, double& raw, double& stored) {
  const v8d lr = splat8(rounding);
  v8d r = {}, st = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const v8d av = load8(a + j);
    r = max8(r, av);
    st = max8(st, abs8(load8(dot + j)) + lr * av);
  }
  double rm = hmax(r), sm = hmax(st);
  for (; j < n; ++j) {
    rm = std::max(rm, a[j]);
    sm = std::max(sm, std::abs(dot[j]) + rounding * a[j]);
  }
  raw = rm;
  stored = sm;
}

ATTNCHECK_SIMD_CLONES
void offsets_kernel(const double* s, const double* vis, double m, double* x, int64_t n) {
  const v8d mv = splat8(m), zero = {};
  for (int64_t j = 0; j < n; j += 8) store8(x + j, load8(vis + j) > 0 ? load8(s + j) - mv : zero);
}

ATTNCHECK_SIMD_CLONES
double masked_sum_kernel(double* w, const double* vis, int64_t n) {
  v8d acc = {};
  for (int64_t j = 0; j < n; j += 8) {
    const v8d wv = load8(w + j) * load8(vis + j);
    store8(w + j, wv);
    acc += wv;
  }
  return hsum(acc);
}

ATTNCHECK_SIMD_CLONES
RowErrorSums row_errors_kernel(const LogitErrorTerms& dt, const LogitErrorTerms& orc, const double* s, const double* a,
                               const double* x, const double* w, const double* vis, const double* ksum,
                               const double* x_dt, const double* x_or, double total, double* p, double* e_dt,
                               double* e_or, int64_t n) {
  const double log_total = __builtin_log(total);
  const v8d tot = splat8(total), lt = splat8(log_total);
  const v8d g_dt = splat8(dt.gamma_d3), u_dt = splat8(dt.u), xe_dt = splat8(dt.exp_err), u16 = splat8(dt.u16);
  const v8d ftz = splat8(dt.ftz_scale), qsum = splat8(dt.qsum);
  const v8d g_or = splat8(orc.gamma_d3), u_or = splat8(orc.u), xe_or = splat8(orc.exp_err);
  v8d ent = {}, emax = {}, ydt = {}, yor = {};
  for (int64_t j = 0; j < n; j += 8) {
    const v8d sv = load8(s + j), av = load8(a + j), xv = load8(x + j), seen = load8(vis + j);
    const v8d pj = load8(w + j) / tot;
    store8(p + j, pj);
    ent -= pj * (xv - lt);
    const v8d ax = abs8(xv);
    // logit_error (bound_arithmetic.h): dot product and scale, max subtraction, exp, 16-bit storage, flush to zero.
    // 0 for hidden keys: their error may be huge (|k| near the domain's edge,
    // allowed for hidden keys; sum_d |k_jd| may even overflow, and 0 * inf is
    // NaN), and expm1_up8 of it inf / inf = NaN even where p_j = 0.
    // The flush term 0 where nothing scales (scale 0): sum_d |k_jd| may be inf.
    const v8d zero = {};
    const v8d flush = ftz > zero ? ftz * (qsum + load8(ksum + j)) : zero;
    const v8d ed = seen > zero ? g_dt * av + u_dt * ax + xe_dt + u16 * (abs8(sv) + ax + 1) + flush + load8(x_dt + j)
                               : zero;
    const v8d eo = seen > zero ? g_or * av + u_or * ax + xe_or + load8(x_or + j) : zero;
    store8(e_dt + j, ed);
    store8(e_or + j, eo);
    emax = max8(emax, ed);
    ydt += pj * expm1_up8(ed);
    yor += pj * expm1_up8(eo);
  }
  RowErrorSums r;
  r.entropy = hsum(ent);
  r.e_max = hmax(emax);
  r.y_dt = hsum(ydt);
  r.y_or = hsum(yor);
  return r;
}

ATTNCHECK_SIMD_CLONES
bool row_shifts_kernel(const double* p, const double* e_dt, const double* e_or, const double* vis, double E_dt,
                       double E_or, double weight_floor, double weight_step, double total, double safety, double* devw,
                       double* pw, double* d16, int64_t n) {
  const v8d Ed = splat8(E_dt), Eo = splat8(E_or), floor = splat8(kWeightFloor), one = splat8(1.0), zero = {};
  const v8d sf = splat8(safety);
  const v8d wf = splat8(weight_floor), ws = splat8(weight_step), tot = splat8(total), wf_l = splat8(weight_floor / total);
  v8d below = {};
  for (int64_t j = 0; j < n; j += 8) {
    const v8d pj = load8(p + j), seen = load8(vis + j);
    const v8d pf = max8(pj, floor);
    const v8d gd = load8(e_dt + j) + Ed, go = load8(e_or + j) + Eo;
    const v8d sd = seen * max8(min8(one - pj, pf * expm1_up8(gd)), pf * one_minus_exp_neg_up8(gd));
    const v8d so = seen * max8(min8(one - pj, pf * expm1_up8(go)), pf * one_minus_exp_neg_up8(go));
    store8(devw + j, sf * sd + so);
    store8(pw + j, pj + sd);
    if (weight_floor > 0) {
      // A weight that may be stored below the 16-bit format's smallest normal (careful_row).
      const v8d lo = pj - sd, hi = pj + sd;
      v8d d = lo < wf ? ws : zero;
      d = lo * tot < wf ? max8(d, min8(hi, wf_l)) : d;
      d *= seen;
      store8(d16 + j, d);
      below = max8(below, d);
    }
  }
  return hmax(below) > 0;
}

}  // namespace attncheck::oracle_detail
