// Case files of packed problems (ABI v3's cu_seqlens_q/k, total_q/k): they
// survive writing and reading bit for bit, the hash covers the packing, a
// problem without packing is written as before (no packed key, same text, same
// hash), and damaged packing is refused naming the field.
#include <gtest/gtest.h>

#include <string>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "case_record_fixture.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// Three sequences, the middle one empty on both sides, slack after them, and
// lengths shorter than the last query slot.
Problem packed_problem() {
  Problem p = make_problem(DType::f16, Shape{3, 2, 4, 5, 2, 3, 1}, Causal::bottom_right);
  test::fill_exact_values(p);
  p.cu_seqlens_q = {0, 2, 2, 6};
  p.cu_seqlens_k = {0, 5, 5, 8};
  p.total_q = 9;
  p.total_k = 8;
  p.q_lens = {2, 0, 3};
  p.lse_requested = true;
  return p;
}

CaseRecord record_of(const Problem& p) { return test::record_of(p, "packed_equals_padded", "2026-12-06T23:00:00Z"); }

TEST(PackedCase, EveryFieldRoundTrips) {
  const Problem p = packed_problem();
  ASSERT_EQ(p.inconsistency(), "");
  const CaseRecord rec = record_of(p);
  const std::string text = case_to_json(rec);
  EXPECT_NE(text.find("\"cu_seqlens_q\": [0, 2, 2, 6]"), std::string::npos) << text;
  EXPECT_NE(text.find("\"total_k\": 8"), std::string::npos) << text;
  const CaseRecord back = case_from_json(text, "memory");
  EXPECT_TRUE(back.problem == p);
  EXPECT_EQ(back.problem.cu_seqlens_k, p.cu_seqlens_k);
  EXPECT_EQ(back.problem.total_q, 9);
  EXPECT_EQ(case_to_json(back), text);  // the text is stable
  EXPECT_EQ(case_content_hash(back), case_content_hash(rec));
}

TEST(PackedCase, HashCoversThePackingAndLeavesOthersAlone) {
  const Problem p = packed_problem();
  const uint64_t h = case_content_hash(record_of(p));
  Problem slack = p;
  slack.total_q = 10;
  EXPECT_NE(case_content_hash(record_of(slack)), h);
  Problem moved = p;
  moved.cu_seqlens_k = {0, 4, 5, 8};
  EXPECT_NE(case_content_hash(record_of(moved)), h);
  // Unpacked, the file holds no packed key: written, and hashed, as before packing existed.
  Problem padded = p;
  padded.cu_seqlens_q.clear(), padded.cu_seqlens_k.clear();
  padded.total_q = padded.total_k = 0;
  padded.q_lens = {2, 0, 4};
  ASSERT_EQ(padded.inconsistency(), "");
  const std::string text = case_to_json(record_of(padded));
  EXPECT_EQ(text.find("cu_seqlens"), std::string::npos) << text;
  EXPECT_EQ(text.find("total_q"), std::string::npos) << text;
}

TEST(PackedCase, DamagedPackingIsRefusedByName) {
  const std::string text = case_to_json(record_of(packed_problem()));
  auto refused = [&](const std::string& from, const std::string& to, const std::string& words) {
    test::expect_refused(text, from, to, words);
  };
  refused("\"cu_seqlens_q\": [0, 2, 2, 6]", "\"cu_seqlens_q\": [1, 2, 2, 6]", "problem.cu_seqlens_q[0]");
  refused("\"cu_seqlens_q\": [0, 2, 2, 6]", "\"cu_seqlens_q\": [0, 2, 2]", "problem.cu_seqlens_q holds 3 entries");
  refused("\"cu_seqlens_k\": [0, 5, 5, 8]", "\"cu_seqlens_k\": [0, 5, 4, 8]", "problem.cu_seqlens_k[2]");
  refused("\"cu_seqlens_q\": [0, 2, 2, 6]", "\"cu_seqlens_q\": [0, 2, 2, 7]", "problem.cu_seqlens_q[3]");  // a slot of 5 > q_len
  refused("\"total_k\": 8", "\"total_k\": 7", "problem.cu_seqlens_k[3]");
  refused("\"cu_seqlens_q\": [0, 2, 2, 6]", "\"cu_seqlens_q\": null", "problem.total_q = 9 is given without");
  refused("\"q_lens\": [2, 0, 3]", "\"q_lens\": [3, 0, 3]", "q_lens[0] = 3 is longer than its packed slot");
}

}  // namespace
}  // namespace attncheck
