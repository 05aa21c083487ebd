#include "impls/vector_isa.h"

#include <algorithm>
#include <atomic>

namespace attncheck {
namespace {

VectorIsa detect() {
#if ATTNCHECK_HAS_ISA_BUILDS
  // __builtin_cpu_supports also checks that the OS saves the vector state (XCR0).
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma"))
    return VectorIsa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return VectorIsa::avx2;
#endif
  return VectorIsa::baseline;
}

std::atomic<VectorIsa> g_cap{VectorIsa::avx512};

}  // namespace

VectorIsa detected_vector_isa() {
  static const VectorIsa isa = detect();
  return isa;
}

VectorIsa vector_isa() { return std::min(detected_vector_isa(), g_cap.load(std::memory_order_relaxed)); }

const char* vector_isa_name(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::avx512: return "avx512";
    case VectorIsa::avx2: return "avx2";
    case VectorIsa::baseline: return "baseline";
  }
  return "?";
}

ScopedVectorIsa::ScopedVectorIsa(VectorIsa isa) : previous_(g_cap.exchange(isa)) {}
ScopedVectorIsa::~ScopedVectorIsa() { g_cap.store(previous_); }

}  // namespace attncheck
