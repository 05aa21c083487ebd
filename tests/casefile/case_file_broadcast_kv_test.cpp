// Case files of problems with K or V expanded (ABI v3's k_broadcast,
// v_broadcast): they survive writing and reading bit for bit, the hash covers
// the axes, a dense problem is written and hashed as before (no key), and a
// damaged value is refused naming the field or the key that differs.
#include <gtest/gtest.h>

#include <string>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "case_record_fixture.h"
#include "problem/kv_broadcast.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

Problem expanded_problem() {
  Problem p = make_problem(DType::f16, Shape{2, 2, 2, 3, 2, 2, 2});
  test::fill_exact_values(p);
  expand_kv(p, true, kKvBroadcastBatch | kKvBroadcastHeads);
  expand_kv(p, false, kKvBroadcastHeads);
  return p;
}

CaseRecord record_of(const Problem& p) {
  return test::record_of(p, "broadcast_equals_materialized", "2026-12-07T05:00:00Z");
}

TEST(BroadcastKvCase, EveryFieldRoundTrips) {
  const Problem p = expanded_problem();
  ASSERT_EQ(p.inconsistency(), "");
  const CaseRecord rec = record_of(p);
  const std::string text = case_to_json(rec);
  EXPECT_NE(text.find("\"k_broadcast\": 3"), std::string::npos) << text;
  EXPECT_NE(text.find("\"v_broadcast\": 2"), std::string::npos) << text;
  const CaseRecord back = case_from_json(text, "memory");
  EXPECT_TRUE(back.problem == p);
  EXPECT_EQ(case_to_json(back), text);
  EXPECT_EQ(case_content_hash(back), case_content_hash(rec));
}

TEST(BroadcastKvCase, HashCoversTheAxesAndLeavesDenseProblemsAlone) {
  const Problem p = expanded_problem();
  const uint64_t h = case_content_hash(record_of(p));
  Problem fewer = p;
  fewer.v_broadcast = 0;
  EXPECT_NE(case_content_hash(record_of(fewer)), h);
  const Problem dense = materialized(p);
  const std::string text = case_to_json(record_of(dense));
  EXPECT_EQ(text.find("_broadcast"), std::string::npos) << text;
  EXPECT_NE(case_content_hash(record_of(dense)), h);
}

TEST(BroadcastKvCase, DamagedAxesAreRefusedByName) {
  const std::string text = case_to_json(record_of(expanded_problem()));
  auto refused = [&](const std::string& from, const std::string& to, const std::string& words) {
    test::expect_refused(text, from, to, words);
  };
  refused("\"k_broadcast\": 3", "\"k_broadcast\": 4", "problem.k_broadcast");
  // v's kv heads differ (head 1 reads head 0's values only when they are equal).
  refused("\"v_broadcast\": 2", "\"v_broadcast\": 1", "differs from the slice it repeats");
}

}  // namespace
}  // namespace attncheck
