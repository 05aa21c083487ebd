#include "parallel/vector_isa.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace attncheck {
namespace {

VectorIsa detect_cpu() {
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

// ATTNCHECK_VECTOR_ISA=avx2 or baseline lowers the choice for the whole
// process: what a machine without AVX-512 (or without AVX2) runs, on this one.
VectorIsa detect() {
  const VectorIsa cpu = detect_cpu();
  const char* env = std::getenv("ATTNCHECK_VECTOR_ISA");
  if (!env || !*env) return cpu;
  if (const std::optional<VectorIsa> isa = parse_vector_isa(env)) return std::min(cpu, *isa);
  std::fprintf(stderr, "attncheck: ATTNCHECK_VECTOR_ISA=%s is not one of avx512, avx2, baseline; using %s\n", env,
               vector_isa_name(cpu));
  return cpu;
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

std::optional<VectorIsa> parse_vector_isa(std::string_view text) {
  for (VectorIsa isa : {VectorIsa::avx512, VectorIsa::avx2, VectorIsa::baseline})
    if (text == vector_isa_name(isa)) return isa;
  return std::nullopt;
}

ScopedVectorIsa::ScopedVectorIsa(VectorIsa isa) : previous_(g_cap.exchange(isa)) {}
ScopedVectorIsa::~ScopedVectorIsa() { g_cap.store(previous_); }

}  // namespace attncheck
