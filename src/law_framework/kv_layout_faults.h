// The layout faults of stored K and V (ABI v3, "Stored formats of K and V"), as the real
// values a faulty decoder reads: a diagnosis for quantized_matches_oracle and
// equal_values_across_formats. Each fault maps a problem to the same problem with one side's real values replaced
// by what a kernel with that fault computes over; when an implementation's output matches the
// oracle of that replaced problem within its bound (and not the case's), the fault explains
// the failure, and the law names it. Faults, for a side stored in:
//   fp8, int8, int4    "its scales ignored" (each code read times 1; flashinfer#4979)
//   q4_0               "Q4_0's nibbles read as pairs" (channel 2i low, 2i+1 high, INT4's layout)
//   int4               "INT4's nibbles read as halves" (Q4_0's layout, by 32 channels)
//   fp8_e4m3           "e4m3 read as FNUZ" (bias 8: half the value; rocm-libraries#11612)
//
// Example usage (a law's failure):
//   if (std::string why = explain_kv_layout_fault(p, out); !why.empty()) message += "; " + why;
#pragma once

#include <string>
#include <vector>

#include "problem/problem.h"

namespace attncheck {

// "explained by K's (V's) <fault>: the output is within the bound of attention over the values
// so read", for the first fault that explains `out`; "" when none does.
std::string explain_kv_layout_fault(const Problem& p, const std::vector<double>& out);

}  // namespace attncheck
