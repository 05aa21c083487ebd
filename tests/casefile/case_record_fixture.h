// What the case-file tests of ABI v3's fields (packed, paged, stored K/V formats) share:
// values every dtype holds exactly, and a record around a problem as a law's failure
// would save it.
#pragma once

#include <string>

#include "casefile/case_file.h"
#include "problem/problem.h"

namespace attncheck::test {

// -1, -0.75, ..., 1 in turn over q, k and v: exact in every dtype, none of them special.
inline void fill_exact_values(Problem& p) {
  int n = 0;
  for (auto* tensor : {&p.q, &p.k, &p.v})
    for (double& x : *tensor) x = 0.25 * (n++ % 9) - 1;
}

// A failure of `law` on the built-in reference, found by RapidCheck at seed 5.
inline CaseRecord record_of(const Problem& p, const std::string& law, const std::string& date) {
  CaseRecord r;
  r.problem = p;
  r.law = law;
  r.implementation = "reference";
  r.source = "builtin:reference";
  r.found_by = "rapidcheck";
  r.seed = 5;
  r.date = date;
  return r;
}

}  // namespace attncheck::test
