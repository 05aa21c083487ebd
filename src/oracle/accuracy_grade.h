// The accuracy grade (docs/tolerance.md, "The typical error"): how an
// implementation's errors against the oracle compare with what a careful
// kernel of the same dtype makes on the same cases. One case gives an
// AccuracyCase (typical_error.h, grade_case); a law's cases of one dtype are
// summarised into an AccuracyGrade, which the reports print beside the verdict.
// Both are plain numbers (trivially copyable): the --jobs wire copies them as bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "problem/dtype.h"

namespace attncheck {

// One judged case where the typical-error model holds, over the output
// elements it grades (every row it grades, every value column).
struct AccuracyCase {
  DType dtype = DType::f32;
  int64_t elements = 0;      // output elements graded
  double typical_rms = 0;    // sqrt(mean over elements of (|error| / typical error)^2): ~1 for a careful kernel
  double worst_ulps = 0;     // max over elements of |error| in ulps of the output dtype at the exact value
  double worst_of_bound = 0; // max over elements of |error| / the hard bound (compare_to_oracle's ratio)
  // The same root-mean-square against a careful kernel that may store its
  // intermediates in the 16-bit format (typical_error's stored16): what the
  // accuracy law decides on. typical_rms for f32.
  double stored16_rms = 0;
};

// The cases of one dtype, summarised: median and 99th percentile over cases.
struct AccuracyGrade {
  DType dtype = DType::f32;
  int32_t cases = 0;
  int64_t elements = 0;
  double typical_median = 0, typical_p99 = 0;  // x a careful kernel of the dtype
  double ulps_median = 0, ulps_p99 = 0;        // worst element's ulps
  double bound_median = 0, bound_p99 = 0;      // worst element's fraction of the hard bound
  double stored16_median = 0, stored16_p99 = 0;  // x a careful kernel storing in 16 bits (= typical for f32)
};

// One grade per dtype present in `cases`, in the order of every_dtype().
// The p-th quantile is the sorted value at rank ceil(p * n) (1-based), so the
// p99 of fewer than 100 cases is their largest.
std::vector<AccuracyGrade> summarise_accuracy(const std::vector<AccuracyCase>& cases);

// The accuracy law's decision (docs/tolerance.md, "The accuracy law"): a dtype
// fails when it has at least kAccuracyMinCases graded cases and at least half
// of them are beyond kAccuracyFactor times the typical error (stored16_rms:
// for f16 and bf16 the careful kernel may store intermediates in 16 bits).
// If a careful kernel's case is beyond it with probability q (independently),
// a false alarm on N cases has probability at most C(N, N/2) q^(N/2) <= (4q)^(N/2).
inline constexpr double kAccuracyFactor = 2;
inline constexpr int kAccuracyMinCases = 20;
// Empty: no dtype fails; else the failure, in words, for every dtype that does.
std::string accuracy_verdict(const std::vector<AccuracyCase>& cases);

// "1.2x a careful f32 kernel (median), 3x (p99); worst element 0.6 ulp (median case),
// 0.02 of the bound; 45 cases": the line every report prints.
std::string accuracy_text(const AccuracyGrade& g);

}  // namespace attncheck
