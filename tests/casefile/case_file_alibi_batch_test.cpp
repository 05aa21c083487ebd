// Case files of problems with ALiBi slopes per (batch, head) (ABI v3's
// alibi_batch_stride, alibi_slopes [batch][heads]): they survive writing and
// reading bit for bit, the hash covers the stride, a problem with version 2's
// [heads] is written and hashed as before (no alibi_batch_stride key), and a
// damaged stride or row count is refused naming the field.
#include <gtest/gtest.h>

#include <string>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "case_record_fixture.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// Two entries of three heads, rows 5 floats apart in the call.
Problem per_batch_problem() {
  Problem p = make_problem(DType::bf16, Shape{2, 3, 2, 4, 2, 2}, Causal::bottom_right);
  test::fill_exact_values(p);
  p.alibi_slopes = {0.5, 0.25, 0.125, 1, 0, 2};
  p.alibi_batch_stride = 5;
  return p;
}

CaseRecord record_of(const Problem& p) {
  return test::record_of(p, "alibi_batch_matches_alone", "2026-12-07T04:30:00Z");
}

TEST(AlibiBatchCase, EveryFieldRoundTrips) {
  const Problem p = per_batch_problem();
  ASSERT_EQ(p.inconsistency(), "");
  const CaseRecord rec = record_of(p);
  const std::string text = case_to_json(rec);
  EXPECT_NE(text.find("\"alibi_batch_stride\": 5"), std::string::npos) << text;
  const CaseRecord back = case_from_json(text, "memory");
  EXPECT_TRUE(back.problem == p);
  EXPECT_EQ(back.problem.alibi_slopes, p.alibi_slopes);
  EXPECT_EQ(back.problem.alibi_batch_stride, 5);
  EXPECT_EQ(case_to_json(back), text);  // the text is stable
  EXPECT_EQ(case_content_hash(back), case_content_hash(rec));
}

TEST(AlibiBatchCase, HashCoversTheStrideAndLeavesVersionTwoSlopesAlone) {
  const Problem p = per_batch_problem();
  const uint64_t h = case_content_hash(record_of(p));
  Problem dense = p;
  dense.alibi_batch_stride = 3;
  EXPECT_NE(case_content_hash(record_of(dense)), h);
  // Version 2's [heads]: no alibi_batch_stride key, and the same text and hash
  // as a problem that never had the field (its default is 0).
  Problem v2 = p;
  v2.alibi_slopes.resize(3);
  v2.alibi_batch_stride = 0;
  ASSERT_EQ(v2.inconsistency(), "");
  const std::string text = case_to_json(record_of(v2));
  EXPECT_EQ(text.find("alibi_batch_stride"), std::string::npos) << text;
  EXPECT_NE(case_content_hash(record_of(v2)), h);
  const CaseRecord back = case_from_json(text, "memory");
  EXPECT_EQ(back.problem.alibi_batch_stride, 0);
  EXPECT_EQ(back.problem.alibi_slopes.size(), 3u);
}

TEST(AlibiBatchCase, DamagedStrideIsRefusedByName) {
  const std::string text = case_to_json(record_of(per_batch_problem()));
  auto refused = [&](const std::string& from, const std::string& to, const std::string& words) {
    test::expect_refused(text, from, to, words);
  };
  refused("\"alibi_batch_stride\": 5", "\"alibi_batch_stride\": 2", "problem.alibi_batch_stride");  // below heads
  refused("\"alibi_batch_stride\": 5", "\"alibi_batch_stride\": 0", "problem.alibi_batch_stride");
  // Without the stride the slopes are [heads]: six values are too many.
  refused("\"alibi_batch_stride\": 5", "\"alibi_batch_strid\": 5", "alibi_slopes");
}

}  // namespace
}  // namespace attncheck
