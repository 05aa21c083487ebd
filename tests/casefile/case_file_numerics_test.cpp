// Case files of problems with declared numerics (ABI v3's Problem::numerics,
// the ATTNCHECK_NUMERICS_* bits that apply to the call): the field survives
// writing and reading, the hash covers it, a problem without numerics is
// written and hashed as before (no numerics key), and a bit the bound does not
// widen by is refused (Problem::inconsistency's other refusals, a bit that does
// not apply and q past 2^15: tests/core/kv_numerics_test.cpp).
#include <gtest/gtest.h>

#include <string>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "case_record_fixture.h"
#include "problem/kv_numerics.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// One f32 row against three keys of 32 channels in Q8_0 (d = 1/4 per block), q within 2^15.
Problem q8_problem() {
  Problem p = make_problem(DType::f32, Shape{1, 1, 1, 3, 32, 32, 1});
  test::fill_exact_values(p);
  p.k_format = KvFormat::q8_0;
  p.k_scales = {0.25, 0.25, 0.25};
  p.numerics = kNumericsQAsQ8_0;
  return p;
}

CaseRecord record_of(const Problem& p) { return test::record_of(p, "quantized_matches_oracle", "2026-12-07T05:20:00Z"); }

TEST(NumericsCase, RoundTripsAndIsHashedOnlyWhenSet) {
  const Problem p = q8_problem();
  ASSERT_EQ(p.inconsistency(), "");
  const std::string text = case_to_json(record_of(p));
  EXPECT_NE(text.find("\"numerics\": 1"), std::string::npos) << text;
  const CaseRecord back = case_from_json(text, "memory");
  EXPECT_TRUE(back.problem == p);
  EXPECT_EQ(back.problem.numerics, kNumericsQAsQ8_0);
  EXPECT_EQ(case_to_json(back), text);
  Problem none = p;
  none.numerics = 0;
  const std::string plain = case_to_json(record_of(none));
  EXPECT_EQ(plain.find("numerics"), std::string::npos) << plain;
  EXPECT_NE(case_content_hash(record_of(none)), case_content_hash(record_of(p)));
  EXPECT_EQ(case_from_json(plain, "memory").problem.numerics, 0);
}

TEST(NumericsCase, ABitThatDoesNotApplyOrABadQueryIsRefused) {
  const std::string text = case_to_json(record_of(q8_problem()));
  auto refused = [&](const std::string& from, const std::string& to, const std::string& words) {
    test::expect_refused(text, from, to, words);
  };
  refused("\"numerics\": 1", "\"numerics\": 2", "not widen");   // KV_PRECISION: not judged yet
  refused("\"numerics\": 1", "\"numerics\": 4", "problem.numerics");  // no such bit
}

}  // namespace
}  // namespace attncheck
