// The oracle's results for recently seen problems, so that a problem the
// oracle has already evaluated is not evaluated again. The checker asks for
// the same problems often: every implementation with the same features draws
// the same cases for a law at a seed (the embedded default checks 28), and
// several laws derive problems that differ from the drawn one only in what
// the oracle does not read (the layouts of the call, a dout, whether an lse
// is requested).
//
// The key is every field the forward oracle reads, byte for byte (NaN
// payloads and signed zeros included): a hit is the same problem to the
// oracle, not a likely one. Those fields are the ones the Problem's field
// list marks `oracle` (problem/problem_fields.h), so a new field is in the
// key unless its line says the oracle does not read it. Problems whose inputs exceed kMaxKeyBytes are
// never kept (a long-context call costs far more in the oracle than a copy,
// and would crowd out the rest); the memo holds at most kMaxBytes of keys and
// results and forgets the oldest first. Thread-safe; one memo per process.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "oracle/oracle.h"

namespace attncheck::oracle_detail {

inline constexpr std::size_t kMaxKeyBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxBytes = std::size_t{64} << 20;

// The forward oracle's inputs of p as bytes, or nullopt when they exceed kMaxKeyBytes.
std::optional<std::string> memo_key(const Problem& p);

// The result kept for `key`, if any.
std::optional<OracleResult> memo_find(const std::string& key);
// Keeps `r` for `key` (forgetting the oldest entries past kMaxBytes).
void memo_keep(std::string key, const OracleResult& r);

// How often memo_find found a result and how often not, since the process
// started (for tests and benchmarks).
struct MemoCounts {
  std::size_t hits = 0, misses = 0;
};
MemoCounts memo_counts();

}  // namespace attncheck::oracle_detail
