// The GEMM behind gemm_peak, in a shared library of its own so that it can be
// compiled for this machine's vector ISA (-march=native: AVX-512 and FMA where
// the CPU has them) while every other target, Eigen users included, keeps the
// project's flags. Eigen's templates compiled with different ISA flags in two
// translation units of one program would be one inline function with two
// bodies (an ODR violation the linker resolves at random); here every symbol
// but the one below is hidden (bench/CMakeLists.txt), so this library's
// instantiations never meet the executable's.
//
// GCC 12 warns -Wmaybe-uninitialized inside avx512fintrin.h for Eigen's
// AVX-512 packet code (the _mm512_undefined_* placeholders its intrinsics
// start from, a known false positive); off for this file alone.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>

#include <cstdint>

extern "C" __attribute__((visibility("default"))) void attncheck_bench_gemm_cols(
    const float* a, const float* b, float* c, int64_t n, int64_t col_begin, int64_t col_end) {
  // Column-major n x n: C[:, begin:end] = A * B[:, begin:end].
  const Eigen::Map<const Eigen::MatrixXf> A(a, n, n), B(b, n, n);
  Eigen::Map<Eigen::MatrixXf> C(c, n, n);
  C.middleCols(col_begin, col_end - col_begin).noalias() = A * B.middleCols(col_begin, col_end - col_begin);
}

extern "C" __attribute__((visibility("default"))) const char* attncheck_bench_gemm_isa() {
  return Eigen::SimdInstructionSetsInUse();
}
