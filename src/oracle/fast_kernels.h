// The vectorised loops of the oracle's blocked paths (fast_block.h) in
// double, over raw arrays, built for each vector ISA (simd_native.h): the per-key loops
// of both paths, and the sums over V of the f64 path (the double path forms
// those in float, fast_bound_float.h, and falls back on these). Shapes, for a
// block of kRows query rows of one head against its keys:
//   per-key rows [kRows][stride], stride = n16 (whole tiles of kTile keys): logits, weights, shifts
//   v [n][vstride]           V padded to whole kCols columns
#pragma once

#include <cstdint>

namespace attncheck::oracle_detail {

inline constexpr int kRows = 4;   // query rows per block
inline constexpr int kTile = 16;  // keys per tile of the logits kernel
inline constexpr int kCols = 16;  // value columns per pass of the V kernels

// Over keys [0, n), columns [c0, c0 + kCols):
//   out[r][c] = sum_j w[r][j] v[j][c], sabs[r][c] = sum_j pw[r][j] |v[j][c]|,
//   vmax[r][c] = max over keys with vis[r][j] = 1 of |v[j][c]|.   (outputs [kRows][kCols])
// out may be null (the f64 path forms the sum in double-word itself): then w is not read;
// vmax may be null (the maxima come from range_max_kernel_d): then vis is not read.
void values_kernel(const double* v, int64_t vstride, int64_t c0, const double* w, const double* pw, const double* vis,
                   int64_t stride, int64_t n, double* out, double* sabs, double* vmax);

// Given the outputs o [kRows][kCols]: dev[r][c] = sum_j devw[r][j] |v[j][c] - o[r][c]| (devw:
// row_shifts_kernel's combined weights) and (d16 not null) sub16[r][c] = sum_j d16[r][j] max(|v[j][c]|, |v[j][c] - o[r][c]|).
void deviation_kernel(const double* v, int64_t vstride, int64_t c0, const double* o, const double* devw,
                      const double* d16, int64_t stride, int64_t n, double* dev, double* sub16);

// Keys per block of the column maxima (column_max_kernel_d here, column_max_kernel in
// fast_bound_float.h for float V).
inline constexpr int64_t kMaxChunk = 64;
// The double V's column maxima (the f64 path): cmax[t][c] = max over keys
// [t kMaxChunk, (t + 1) kMaxChunk) ∩ [0, n) of |v[j][c]|, one slab of kCols columns
// (v [n][kCols], cmax [ceil(n / kMaxChunk)][kCols]); and out[c] = max over keys
// [begin, end) of |v[j][c]| from them (exact; 0 for an empty range).
void column_max_kernel_d(const double* v, int64_t n, double* cmax);
void range_max_kernel_d(const double* v, const double* cmax, int64_t begin, int64_t end, double* out);

// Keys [begin, end) as the range kernels take them: span(b, e) over the keys
// of the partial blocks at either end (all of them when no block is whole),
// block(t) for each whole block t between, whose maxima cmax holds. Always
// inlined (with span and block), so each build's kernel compiles it.
template <class Span, class Block>
__attribute__((always_inline)) inline void for_max_chunks(int64_t begin, int64_t end, Span span, Block block) {
  const int64_t first = (begin + kMaxChunk - 1) / kMaxChunk, last = end / kMaxChunk;  // whole blocks [first, last)
  if (first >= last) return span(begin, end);
  span(begin, first * kMaxChunk);
  for (int64_t t = first; t < last; ++t) block(t);
  span(last * kMaxChunk, end);
}

// Sum of x[0, n) with one accumulator per lane (vectorises without reassociating).
double lane_sum(const double* x, int64_t n);

}  // namespace attncheck::oracle_detail

namespace attncheck::oracle_detail {

// The per-key loops of one row, over keys [0, n) with n a multiple of 8 (rows
// are padded; padding keys have vis = 0). vis[j] is 1 for a key the row sees, else 0.

// s_j = scale dot_j, a_j = |scale| absd_j in place; returns the largest s_j over visible keys (-inf if none).
double scale_logits_kernel(double* dot, double* absd, const double* vis, double scale, int64_t n);

// The domain test's maxima over keys [0, n) (any n): raw = max(0, max_j a_j) and
// stored = max(0, max_j |dot_j| + rounding a_j), std::max's way (a NaN term is passed over).
void logit_maxima_kernel(const double* dot, const double* a, double rounding, int64_t n, double& raw, double& stored);

// w_j *= vis_j; returns sum_j w_j.
double masked_sum_kernel(double* w, const double* vis, int64_t n);

// The logit errors e_j (bound_arithmetic.h logit_error) of the implementation
// (dt) and of the oracle (orc), as plain numbers for the kernel.
struct LogitErrorTerms {
  double gamma_d3, u, exp_err, u16;  // exp_err = exp_ulps * u
  double ftz_scale, qsum;            // ftz_j = ftz_scale (qsum + ksum_j); 0 for the oracle
};
struct RowErrorSums {
  double entropy = 0;  // -sum_j p_j log p_j
  double e_max = 0;    // max over visible keys of e_dt_j
  double y_dt = 0, y_or = 0;  // sum_j p_j expm1_up(e_j): E <= log1p(y)
};
// p_j = w_j / total, e_dt_j and e_or_j per key (0 for keys the row does not see), and the row's sums.
// x_dt, x_or: what the v2 logit transforms add to each key's error (logit_chain.h; zeros without them).
RowErrorSums row_errors_kernel(const LogitErrorTerms& dt, const LogitErrorTerms& orc, const double* s, const double* a,
                               const double* x, const double* w, const double* vis, const double* ksum,
                               const double* x_dt, const double* x_or, double total, double* p, double* e_dt,
                               double* e_or, int64_t n);

// The weights' shifts (fast_block.h): sdt_j, sor_j from p_j, e_j and E;
// pw_j = p_j + sdt_j; devw_j = safety sdt_j + sor_j, the weight of |v_jc - o_c|
// in the bound (safety b_dt + b_or takes sum_j sdt_j |v_jc - o_c| and
// sum_j sor_j |v_jc - o_c|, so one sum over devw stands for both); and with
// weight_floor > 0 the 16-bit allowance d16_j (docs/tolerance.md section 8).
// devw may be e_dt and pw may be p (in place). Returns whether any d16_j > 0.
bool row_shifts_kernel(const double* p, const double* e_dt, const double* e_or, const double* vis, double E_dt,
                       double E_or, double weight_floor, double weight_step, double total, double safety, double* devw,
                       double* pw, double* d16, int64_t n);

// Upper bounds used by the shifts: expm1(g) for 0 <= g < 3 (the series
// against a geometric one) and 1 - exp(-g) for g >= 0 (an alternating series).
inline double expm1_up(double g) { return g + g * g / (2 * (1 - g / 3)); }
inline double one_minus_exp_neg_up(double g) { return g * (1 - g / 2 * (1 - g / 3)); }

// p_j below this counts as this (the shifts are relative to p_j; a weight that
// underflowed in double may still move by a tiny absolute amount).
inline constexpr double kWeightFloor = 0x1p-1000;

}  // namespace attncheck::oracle_detail
