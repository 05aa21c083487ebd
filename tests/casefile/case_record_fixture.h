// What the case-file tests of ABI v3's fields (packed, paged, stored K/V formats,
// per-batch ALiBi, broadcast K/V, numerics) share: values every dtype holds exactly, a
// record around a problem as a law's failure would save it, and a damaged file's refusal.
#pragma once

#include <gtest/gtest.h>

#include <exception>
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

// `text` (a case file) with its first `from` replaced by `to` must be refused
// by the reader, with `words` in the message (the damaged field, named).
inline void expect_refused(const std::string& text, const std::string& from, const std::string& to,
                           const std::string& words) {
  std::string bad = text;
  const std::size_t at = bad.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  bad.replace(at, from.size(), to);
  try {
    case_from_json(bad, "bad.json");
    ADD_FAILURE() << "accepted: " << to;
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

}  // namespace attncheck::test
