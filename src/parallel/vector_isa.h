// Which build of the hot loops this machine runs (online's forward and
// backward; the oracle's kernels, oracle/simd_native.h). The library is built
// without -march (one binary for every x86-64), so each hot function is
// compiled three times from one body:
//   ATTNCHECK_ISA_AVX512: AVX-512 (F, VL, BW, DQ) with FMA;
//   ATTNCHECK_ISA_AVX2:   AVX2 with FMA;
//   no attribute:         the baseline (SSE2).
// and vector_isa() picks one once, from the CPU. These are ISA-only target
// attributes: the builds keep the default tuning, so the ordinary inline
// functions they call (TypedCallV2's accessors, std::min) still inline into
// them, which an "arch=" target would forbid. GCC's target_clones cannot
// name two ISAs for one clone, and its "avx2" and "avx512f" clones have no
// FMA: a multiply and an add for every multiply-add of the dot products and
// of P.V. Elsewhere than x86-64 GCC or clang, the attributes are empty and
// every build is the baseline.
//
// Example usage (work_body always inlined, so each build compiles it for its ISA):
//   run_in_vector_build([&](auto) __attribute__((always_inline)) { work_body(x); });
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(ATTNCHECK_NO_TARGET_CLONES)
#define ATTNCHECK_ISA_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#define ATTNCHECK_ISA_AVX2 __attribute__((target("avx2,fma")))
#define ATTNCHECK_HAS_ISA_BUILDS 1
#else
#define ATTNCHECK_ISA_AVX512
#define ATTNCHECK_ISA_AVX2
#define ATTNCHECK_HAS_ISA_BUILDS 0
#endif

#include <optional>
#include <string_view>
#include <type_traits>

namespace attncheck {

enum class VectorIsa { baseline, avx2, avx512 };

// The best build this CPU (and its OS) runs, detected once; lowered by a
// live ScopedVectorIsa.
VectorIsa vector_isa();

// The best build this CPU runs, whatever ScopedVectorIsa says; the
// environment variable ATTNCHECK_VECTOR_ISA (avx512, avx2 or baseline) lowers
// it for the whole process, to run here what a machine without AVX-512 runs.
VectorIsa detected_vector_isa();

const char* vector_isa_name(VectorIsa isa);

// The ISA ATTNCHECK_VECTOR_ISA names ("avx512", "avx2", "baseline"), or
// nullopt for any other text. The program refuses another value (exit 2);
// the library, where nothing can refuse it, warns once on stderr and uses the CPU's best.
std::optional<VectorIsa> parse_vector_isa(std::string_view text);

// Caps vector_isa() at `isa` for its lifetime (a process-wide setting, so
// that parallel_for's threads see it too): for tests, which run each build on
// one machine. Not for use while another thread runs a check.
class ScopedVectorIsa {
 public:
  explicit ScopedVectorIsa(VectorIsa isa);
  ~ScopedVectorIsa();
  ScopedVectorIsa(const ScopedVectorIsa&) = delete;
  ScopedVectorIsa& operator=(const ScopedVectorIsa&) = delete;

 private:
  VectorIsa previous_;
};

// The register width of a build in bytes (64 AVX-512, 32 AVX2, 16 SSE2):
// what run_in_vector_build hands its body, for kernels written on vectors of
// that width (oracle/simd_native.h); a body that needs none ignores it.
template <int kBytes>
using VectorBytes = std::integral_constant<int, kBytes>;

// body(VectorBytes<N>{}) in the build vector_isa() picks, returning what body
// returns. body must be an always-inline generic lambda (and what it calls
// always inlined): it is then compiled into each build with that build's
// instruction set.
template <class Body>
ATTNCHECK_ISA_AVX512 decltype(auto) run_avx512(const Body& body) {
  return body(VectorBytes<64>{});
}
template <class Body>
ATTNCHECK_ISA_AVX2 decltype(auto) run_avx2(const Body& body) {
  return body(VectorBytes<32>{});
}
template <class Body>
decltype(auto) run_in_vector_build(const Body& body) {
  switch (vector_isa()) {
    case VectorIsa::avx512: return run_avx512(body);
    case VectorIsa::avx2: return run_avx2(body);
    case VectorIsa::baseline: break;
  }
  return body(VectorBytes<16>{});
}

}  // namespace attncheck
