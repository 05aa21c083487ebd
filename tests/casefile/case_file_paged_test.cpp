// Case files of paged problems (ABI v3's block_table, max_pages_per_seq,
// num_pages, page_size, page_poison): they survive writing and reading bit
// for bit, the hash covers the paging, a problem without paging is written as
// before (no paged key), and damaged paging is refused naming the field.
#include <gtest/gtest.h>

#include <string>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "case_record_fixture.h"
#include "problem/paging.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// Two sequences of 3 and 0 keys of kv_len 4, pages of 2 keys: sequence 0 in
// pages 2 and 0, sequence 1 reads nothing (its entries name page 2); page 1
// is unread; dead slots hold -inf.
Problem paged_problem() {
  Problem p = make_problem(DType::bf16, Shape{2, 2, 3, 4, 2, 3, 1}, Causal::bottom_right);
  test::fill_exact_values(p);
  p.kv_lens = {3, 0};
  p.page_size = 2;
  p.max_pages_per_seq = 2;
  p.num_pages = 3;
  p.page_poison = 2;
  p.block_table = {2, 0, 2, 2};
  p.lse_requested = true;
  return p;
}

CaseRecord record_of(const Problem& p) { return test::record_of(p, "paged_equals_contiguous", "2026-12-07T01:00:00Z"); }

TEST(PagedCase, EveryFieldRoundTrips) {
  const Problem p = paged_problem();
  ASSERT_EQ(p.inconsistency(), "");
  const CaseRecord rec = record_of(p);
  const std::string text = case_to_json(rec);
  EXPECT_NE(text.find("\"block_table\": [2, 0, 2, 2]"), std::string::npos) << text;
  EXPECT_NE(text.find("\"page_size\": 2"), std::string::npos) << text;
  EXPECT_NE(text.find("\"page_poison\": 2"), std::string::npos) << text;
  const CaseRecord back = case_from_json(text, "memory");
  EXPECT_TRUE(back.problem == p);
  EXPECT_EQ(back.problem.num_pages, 3);
  EXPECT_EQ(case_to_json(back), text);  // the text is stable
  EXPECT_EQ(case_content_hash(back), case_content_hash(rec));
}

TEST(PagedCase, HashCoversThePagingAndLeavesOthersAlone) {
  const Problem p = paged_problem();
  const uint64_t h = case_content_hash(record_of(p));
  Problem moved = p;
  moved.block_table = {1, 0, 2, 2};
  ASSERT_EQ(moved.inconsistency(), "");
  EXPECT_NE(case_content_hash(record_of(moved)), h);
  Problem poison = p;
  poison.page_poison = 0;
  EXPECT_NE(case_content_hash(record_of(poison)), h);
  // Unpaged, the file holds no paged key: written, and hashed, as before paging existed.
  const std::string text = case_to_json(record_of(unpaged(p)));
  EXPECT_EQ(text.find("block_table"), std::string::npos) << text;
  EXPECT_EQ(text.find("page_size"), std::string::npos) << text;
}

TEST(PagedCase, DamagedPagingIsRefusedByName) {
  const std::string text = case_to_json(record_of(paged_problem()));
  auto refused = [&](const std::string& from, const std::string& to, const std::string& words) {
    test::expect_refused(text, from, to, words);
  };
  refused("\"block_table\": [2, 0, 2, 2]", "\"block_table\": [2, 0, 3, 2]", "problem.block_table[2]");
  refused("\"block_table\": [2, 0, 2, 2]", "\"block_table\": [2, 0, 2]", "problem.block_table holds 3 entries");
  refused("\"block_table\": [2, 0, 2, 2]", "\"block_table\": null", "without problem.block_table");
  refused("\"page_poison\": 2", "\"page_poison\": 7", "problem.page_poison");
  refused("\"page_size\": 2", "\"page_size\": 1", "kv_len = 4 is past max_pages_per_seq * page_size = 2");
  refused("\"block_table\": [2, 0, 2, 2]", "\"block_table\": [2, 2, 2, 2]", "share slot 0 of page 2 but differ");
}

}  // namespace
}  // namespace attncheck
