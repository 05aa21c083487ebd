// 64-bit FNV-1a, the one hash attncheck uses for identities that must be
// stable across runs, processes and machines: a problem's fingerprint (the
// seed of the companions a law derives), a case file's content hash (its
// name), a law's seed within a run. Not for anything adversarial.
//
// Example usage:
//   Fnv1a h;                              // or Fnv1a h(Fnv1a::kSeedBasis) for seeds
//   h.bytes(name.data(), name.size());
//   uint64_t id = h.value;
#pragma once

#include <cstddef>
#include <cstdint>

namespace attncheck {

struct Fnv1a {
  // FNV-1a's offset basis (14695981039346656037), which case file names use.
  static constexpr uint64_t kOffsetBasis = 0xcbf29ce484222325ull;
  // Problem fingerprints and law seeds start from 1469598103934665603, the
  // basis with its last digit lost in an early version. Kept: every seed a
  // report ever printed and every saved case's verdict depends on it. Any
  // start value hashes equally well.
  static constexpr uint64_t kSeedBasis = 1469598103934665603ull;

  uint64_t value;
  explicit Fnv1a(uint64_t basis = kOffsetBasis) : value(basis) {}

  void bytes(const void* data, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) value = (value ^ b[i]) * 0x100000001b3ull;
  }
  // x's eight bytes, least significant first (the same on every machine).
  void u64(uint64_t x) {
    for (int i = 0; i < 8; ++i) {
      const unsigned char b = static_cast<unsigned char>(x >> (8 * i));
      bytes(&b, 1);
    }
  }
};

}  // namespace attncheck
