// Case files of problems whose V is a view of K (ABI v3's V_VIEW_OF_K, MLA): they survive
// writing and reading bit for bit, the hash covers the view, a problem without it is written
// and hashed as before (no v_view_of_k key), and a view whose v is not k's channels is refused.
#include <gtest/gtest.h>

#include <string>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "case_record_fixture.h"
#include "gen/v_view_draws.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// One sequence of 3 keys, head_dim 3, value_dim 2: v is k's first two channels.
Problem view_problem() {
  Problem p = make_problem(DType::f16, Shape{1, 2, 2, 3, 3, 2, 1}, Causal::bottom_right, 0.5);
  test::fill_exact_values(p);
  gen::make_v_a_view_of_k(p);
  return p;
}

CaseRecord record_of(const Problem& p) { return test::record_of(p, "mla_matches_oracle", "2026-12-07T04:30:00Z"); }

TEST(VViewCase, EveryFieldRoundTrips) {
  const Problem p = view_problem();
  ASSERT_EQ(p.inconsistency(), "");
  const CaseRecord rec = record_of(p);
  const std::string text = case_to_json(rec);
  EXPECT_NE(text.find("\"v_view_of_k\": true"), std::string::npos) << text;
  const CaseRecord back = case_from_json(text, "memory");
  EXPECT_TRUE(back.problem == p);
  EXPECT_TRUE(back.problem.v_view_of_k);
  EXPECT_EQ(case_to_json(back), text);
  EXPECT_EQ(case_content_hash(back), case_content_hash(rec));
}

TEST(VViewCase, HashCoversTheViewAndLeavesOthersAlone) {
  const Problem p = view_problem();
  Problem copied = p;
  copied.v_view_of_k = false;
  EXPECT_NE(case_content_hash(record_of(p)), case_content_hash(record_of(copied)));
  const std::string text = case_to_json(record_of(copied));
  EXPECT_EQ(text.find("v_view_of_k"), std::string::npos) << text;
}

TEST(VViewCase, AViewWhoseVIsNotKsIsRefused) {
  const std::string text = case_to_json(record_of(view_problem()));
  // v's first row made other than k's: the view would read k's bytes, not these.
  const std::size_t v_at = text.find("\"v\": [");
  ASSERT_NE(v_at, std::string::npos) << text;
  std::string bad = text;
  const std::size_t first = bad.find('"', v_at + 6);  // values are hex-float strings
  const std::size_t end = bad.find('"', first + 1) + 1;
  bad.replace(first, end - first, "\"0x1p-3\"");
  try {
    case_from_json(bad, "bad.json");
    ADD_FAILURE() << "accepted: " << bad;
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("v_view_of_k but v's key row 0 channel 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attncheck
