#include "oracle/double_double_array.h"

#include "oracle/double_double_exp.h"

// One clone per instruction set, chosen by an ifunc resolver at load time
// (GCC >= 6, clang >= 14; ELF only). The x86-64-v3/v4 levels include FMA, so
// std::fma is one instruction there; the default clone calls libm's fma
// (correctly rounded, same results, not vectorised). ATTNCHECK_DD_NO_CLONES
// turns it off for a toolchain or sanitizer that cannot take it.
#if defined(__x86_64__) && defined(__ELF__) && defined(__has_attribute) && !defined(ATTNCHECK_DD_NO_CLONES)
#if __has_attribute(target_clones)
#define ATTNCHECK_DD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef ATTNCHECK_DD_CLONES
#define ATTNCHECK_DD_CLONES
#endif

// This file is compiled with -ffp-contract=off (src/CMakeLists.txt), so the
// clones cannot contract what the default clone computes unfused, whatever
// the rules of double_double.h might have missed.

// The clones are file-local functions with no earlier declaration, and the
// public functions plain wrappers: clang 14 silently ignores target_clones on
// a definition whose declaration (in the header) lacks it.

namespace attncheck::dd {
namespace {

ATTNCHECK_DD_CLONES
void exp_loop(const double* hi, const double* lo, double* out_hi, double* out_lo, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const DW y = exp(DW{hi[i], lo[i]});
    out_hi[i] = y.hi;
    out_lo[i] = y.lo;
  }
}

ATTNCHECK_DD_CLONES
DotResult dot_loop(const double* a, const double* b, int64_t n) { return dot2(a, b, n); }

ATTNCHECK_DD_CLONES
void axpy_loop(DW w, const double* __restrict v, double* __restrict acc_hi, double* __restrict acc_lo, int64_t n) {
  for (int64_t c = 0; c < n; ++c) {
    const DW r = add(DW{acc_hi[c], acc_lo[c]}, mul(w, v[c]));
    acc_hi[c] = r.hi;
    acc_lo[c] = r.lo;
  }
}

}  // namespace

void dd_exp_array(const double* hi, const double* lo, double* out_hi, double* out_lo, int64_t n) {
  exp_loop(hi, lo, out_hi, out_lo, n);
}

DotResult dd_dot(const double* a, const double* b, int64_t n) { return dot_loop(a, b, n); }

void dd_axpy(DW w, const double* v, double* acc_hi, double* acc_lo, int64_t n) { axpy_loop(w, v, acc_hi, acc_lo, n); }

}  // namespace attncheck::dd
