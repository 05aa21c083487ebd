// Multiversioned loops: the build has no -march (one binary for every x86-64),
// so the oracle's hot loops are compiled for AVX-512, AVX2 + FMA and the
// baseline, and the loader picks the best the machine has (GCC/clang
// target_clones, dispatched once through an ifunc). Only plain loops over raw
// arrays carry it: templates (Eigen) compiled for several ISAs would break the
// one-definition rule. Elsewhere, or with sanitizers' interceptors in doubt,
// the baseline alone is built.
#pragma once

// GCC only: clang 14 ignores target_clones on a function its header declared
// without it, and refuses 512-bit vectors by value in an AVX2 clone; clang
// builds (the fuzzers) get the baseline.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(ATTNCHECK_NO_TARGET_CLONES)
#define ATTNCHECK_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATTNCHECK_SIMD_CLONES
#endif
