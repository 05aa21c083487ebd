// The bound's non-negative sums in float on the oracle's double path (f32,
// f16, bf16 problems; fast_block.h): sum_d |q_d| |k_jd|, sum_j (p_j + sdt_j) |v_jc|,
// max_j |v_jc|, sum_j (F sdt_j + sor_j) |v_jc - o_c| (F = kBoundSafetyFactor:
// the implementation's and the oracle's deviation sums in one) and the
// 16-bit allowance's sum. Each only has to be an upper bound to first order,
// so it may be formed in float lanes and lifted back over the exact sum
// (float_sum_factor, float_underflow; docs/tolerance.md, "The bound's sums in
// float"). The exact value (q.k_j, sum_j w_j v_jc) stays in double. The f64
// path keeps its double kernels (fast_kernels.h): its values need not fit a float.
//
// Shapes, for a block of kRows query rows of one head against its keys:
//   qb [kRows][D] double, aqb [kRows][D] float (|q| rounded up)
//   kt [n16/kTile][D][kTile] double, akt the same in float (|k| rounded up)
//   per-key rows [kRows][stride] in float, stride = n16: pw, vis, devw, d16
//   v [n][vstride] double and vf [n][vstride] float (V, exact in float), vstride = whole kCols
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "oracle/bound_arithmetic.h"
#include "oracle/fast_kernels.h"

namespace attncheck::oracle_detail {

// Terms summed in float before a double accumulator takes them: the float
// sums' relative error stays gamma(kFloatChunk + 3) (4e-6) whatever the length.
inline constexpr int64_t kFloatChunk = 64;
inline constexpr double kFloatU = 0x1p-24;          // float's unit roundoff
inline constexpr double kDoubleU = 0x1p-53;
inline constexpr double kFloatTinyLoss = 0x1p-149;  // twice the 2^-150 a rounding into float's subnormals loses

// The factor that lifts a float-formed sum of n non-negative terms over the
// exact one, barring underflow: each term is up to three float roundings (a
// conversion, a subtraction, a product) and kFloatChunk - 1 additions from
// its chunk's float sum, the chunk sums are added in double, and the lift
// itself is rounded in double (the "+ 3"s are spare).
inline double float_sum_factor(int64_t n) {
  const double m = static_cast<double>(std::min(n, kFloatChunk));
  const double chunks = static_cast<double>((n + kFloatChunk - 1) / kFloatChunk);
  return (1 + gamma(m + 3, kFloatU)) * (1 + gamma(chunks + 3, kDoubleU));
}

// What underflow may take from such a sum of `terms` terms whose factors are
// at most `scale` (plus 1 for the other factor): each conversion or product
// that lands below float's normal range loses at most 2^-150, once per factor.
inline double float_underflow(double terms, double scale) { return (terms + 2) * kFloatTinyLoss * (1 + scale); }

// |o - fl(o)| for o rounded to the nearest float.
inline double float_rounding(double o) { return kFloatU * std::abs(o) + 0x1p-150; }

// A float-formed sum of non-negative terms over n keys (values_float_kernel,
// deviation_float_kernel) lifted over the exact one: float_sum_factor(n), what
// underflow may take from its `terms` nonzero terms whose factors reach
// `scale`, and `shift` (for a deviation sum: float_rounding(o) times the sum of
// its weights, what |v - o| may exceed |v - fl(o)| by).
inline double float_sum_up(double raw, int64_t n, double terms, double scale, double shift = 0) {
  return raw * float_sum_factor(n) + float_underflow(terms, scale) + shift;
}

// A double sum of n non-negative doubles (lane_sum) lifted over the exact sum.
inline double double_sum_up(double s, int64_t n) { return s * (1 + gamma(static_cast<double>(n) + 2, kDoubleU)); }

// x >= 0 rounded up to a float (an inf where x exceeds float's range).
inline float float_up(double x) {
  const float f = static_cast<float>(x);
  return static_cast<double>(f) < x ? std::nextafter(f, __builtin_inff()) : f;
}

// dot[r][j] = sum_d q_rd k_jd in double (FMA lanes over keys), and absd[r][j] an
// upper bound on sum_d |q_rd| |k_jd| (float products of the rounded-up
// absolute values, in chunks of kFloatChunk, lifted by float_sum_factor(D) and
// float_underflow(D, 0)), for the keys of tiles [0, tiles).
void logits_mixed_kernel(const double* qb, const float* aqb, const double* kt, const float* akt, int64_t D,
                         int64_t n16, int64_t tiles, double* dot, double* absd);

// logits_mixed_kernel for keys that are all floats (HeadKeys::float_keys), held once:
// ktf [n16/kTile][D][kTile] in float, widened to double for q.k_j (exact) and
// |ktf| for |K| (exact, so equal to float_up(|k|)). The same results, a third
// of the memory traffic.
void logits_float_kernel(const double* qb, const float* aqb, const float* ktf, int64_t D, int64_t n16, int64_t tiles,
                         double* dot, double* absd);

// Over keys [0, n), columns [c0, c0 + kCols), with V in float (HeadKeys::float_values:
// every value of the head a float, widened to double exactly):
//   out[r][c] = sum_j w[r][j] v[j][c] in double (as values_kernel),
//   sabs[r][c] = sum_j pw[r][j] |v[j][c]| in float chunks, not yet lifted.   (outputs [kRows][kCols])
// (values_kernel's max_j |v_jc| comes from range_max_kernel or masked_max_kernel.)
void values_float_kernel(const float* vf, int64_t vstride, int64_t c0, const double* w, const float* pw,
                         int64_t stride, int64_t n, double* out, double* sabs);

// cmax[t][c] = max over keys [t kMaxChunk, (t + 1) kMaxChunk) ∩ [0, n) of |vf[j][c]|, one slab of kCols columns
// (vf [n][kCols], cmax [ceil(n / kMaxChunk)][kCols]).
void column_max_kernel(const float* vf, int64_t n, float* cmax);
// out[c] = max over keys [begin, end) of |vf[j][c]| (exact; 0 for an empty range), from vf and its
// column_max_kernel maxima: the whole blocks inside the range by their maxima, the ends key by key.   (out [kCols])
void range_max_kernel(const float* vf, const float* cmax, int64_t begin, int64_t end, double* out);
// out[c] = max over keys j < n with vis[j] = 1 of |vf[j][c]| (vis [n], out [kCols]).
void masked_max_kernel(const float* vf, const float* vis, int64_t n, double* out);

// With o [kRows][kCols] rounded to floats ô: dev[r][c] = sum_j devw[r][j] |vf[j][c] - ô[r][c]| (devw:
// row_shifts_kernel's combined weights) and (d16 not null) sub16[r][c] = sum_j d16[r][j] max(|vf[j][c]|, |vf[j][c] - ô[r][c]|),
// in float chunks, not yet lifted (nor widened by |o - ô| times the row's sum of devw, d16).
void deviation_float_kernel(const float* vf, int64_t vstride, int64_t c0, const double* o, const float* devw,
                            const float* d16, int64_t stride, int64_t n, double* dev, double* sub16);

// y[0, n) = x[0, n) rounded to the nearest floats.
void to_float_kernel(const double* x, float* y, int64_t n);

}  // namespace attncheck::oracle_detail
