// Bit-for-bit comparison of two outcomes of calls that must repeat every bit
// (the same call rerun, or two calls an ABI version 3 promise says are the
// same): NaN payloads and the sign of zero count. Shared by deterministic,
// grad_deterministic and the promise laws, so that each says a difference
// the same way.
//
// Example usage:
//   if (auto m = outputs_bit_difference(p, first, second, "between two identical calls in a row"))
//     return Verdict::fail(*m + "; a deterministic implementation repeats every bit");
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "problem/outcome.h"
#include "problem/problem.h"

namespace attncheck {

// "3 element(s) differ WHEN; first <out element>: 0.5 (bits 0x..) then 0.50000006 (bits 0x..), 1 ulp apart"
// for the first of `a` and `b` (out's elements of p) whose bits differ; nullopt when none does.
std::optional<std::string> out_bit_difference(const Problem& p, const std::vector<double>& a,
                                              const std::vector<double>& b, const std::string& when);
// out, then lse (where both outcomes carry one): the first that differs, said as above.
std::optional<std::string> outputs_bit_difference(const Problem& p, const Outcome& a, const Outcome& b,
                                                  const std::string& when);
// dq, dk, dv of two backward outcomes, in that order: "2 element(s) of dk differ WHEN; first ...".
std::optional<std::string> grads_bit_difference(const Problem& p, const Outcome& a, const Outcome& b,
                                                const std::string& when);

}  // namespace attncheck
