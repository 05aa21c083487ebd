/* f16_nearest(x): x (a double) rounded once to the nearest IEEE binary16 value
 * (11 significant bits, subnormals in steps of 2^-24, ties to even, infinity
 * from 65520 on), as C converts a double to _Float16. For test kernels that
 * keep 16-bit sums: clang 14 has no _Float16 on x86 (GCC 12 has), and the
 * sanitizer build CI shares with the fuzz smoke is clang's. Written apart from
 * the library's codec (src/problem/dtype_codec.h) and the diagnosis model's
 * copy, so a test that compares them with a kernel built on this checks two
 * implementations, not one against itself. `sum += w` on a _Float16 is
 * `sum = f16_nearest(sum + w)` with the add in double.
 * C and C++. */
#ifndef ATTNCHECK_TESTS_SUPPORT_F16_NEAREST_H
#define ATTNCHECK_TESTS_SUPPORT_F16_NEAREST_H

#include <math.h>

static inline double f16_nearest(double x) {
  const double a = fabs(x);
  if (isnan(x) || a == 0) return x;
  if (a >= 65520.0) return copysign(INFINITY, x);
  int e = 0;
  frexp(a, &e); /* a = m * 2^e, m in [0.5, 1): the quantum is 2^(e - 11) */
  if (e < -13) e = -13; /* below 2^-14 (subnormal): a fixed quantum 2^-24 */
  const double quantum = ldexp(1.0, e - 11);
  return nearbyint(x / quantum) * quantum; /* exact divide and multiply: powers of two */
}

#endif
