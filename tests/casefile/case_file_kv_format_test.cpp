// Case files of problems with stored K and V formats (ABI v3's k_format, v_format,
// k/v_scale_granularity, k/v_scales): they survive writing and reading bit for bit, the hash
// covers them, a problem without them is written as before (no format key), and damaged
// storage is refused naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "case_record_fixture.h"
#include "gen/choice_source.h"
#include "gen/kv_format_draws.h"
#include "problem/problem.h"

namespace attncheck {
namespace {

// bf16, K as int4 per (kv head, channel), V as q8_0 (value_dim 32); the second sequence has
// 2 of 3 keys. The real values are codes times scales, drawn.
Problem formatted_problem() {
  Problem p = make_problem(DType::bf16, Shape{2, 2, 2, 3, 4, 32, 1}, Causal::bottom_right);
  int n = 0;
  for (double& x : p.q) x = 0.25 * (n++ % 9) - 1;
  p.kv_lens = {3, 2};
  gen::RandomChoices r(9);
  gen::store_kv_side(r, p, true, KvFormat::int4, ScaleGranularity::per_kv_head_channel);
  gen::store_kv_side(r, p, false, KvFormat::q8_0, ScaleGranularity::per_tensor);
  for (int64_t c = 0; c < 4; ++c) p.k[p.k_at(1, 2, c)] = 0;  // past Lk: anything
  for (int64_t c = 0; c < 32; ++c) p.v[p.v_at(1, 2, c)] = 0;
  return p;
}

CaseRecord record_of(const Problem& p) { return test::record_of(p, "quantized_matches_oracle", "2026-12-07T02:00:00Z"); }

TEST(KvFormatCase, EveryFieldRoundTrips) {
  const Problem p = formatted_problem();
  ASSERT_EQ(p.inconsistency(), "");
  const CaseRecord rec = record_of(p);
  const std::string text = case_to_json(rec);
  EXPECT_NE(text.find("\"k_format\": \"int4\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"v_format\": \"q8_0\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"k_scale_granularity\": \"per_kv_head_channel\""), std::string::npos) << text;
  const CaseRecord back = case_from_json(text, "memory");
  EXPECT_TRUE(back.problem == p);
  EXPECT_EQ(case_to_json(back), text);  // the text is stable
  EXPECT_EQ(case_content_hash(back), case_content_hash(rec));
}

TEST(KvFormatCase, HashCoversTheFormatsAndLeavesOthersAlone) {
  const Problem p = formatted_problem();
  const uint64_t h = case_content_hash(record_of(p));
  Problem doubled = p;  // K's scales and values times 2: the same codes
  for (double& s : doubled.k_scales) s *= 2;
  for (double& x : doubled.k) x *= 2;
  ASSERT_EQ(doubled.inconsistency(), "");
  EXPECT_NE(case_content_hash(record_of(doubled)), h);
  // Unquantized, the file holds no format key: written, and hashed, as before formats existed.
  Problem plain = p;
  gen::unstore_kv_side(plain, true);
  gen::unstore_kv_side(plain, false);
  const std::string text = case_to_json(record_of(plain));
  EXPECT_EQ(text.find("k_format"), std::string::npos) << text;
  EXPECT_EQ(text.find("v_scales"), std::string::npos) << text;
}

TEST(KvFormatCase, DamagedStorageIsRefusedByName) {
  const Problem p = formatted_problem();
  const std::string text = case_to_json(record_of(p));
  auto refused = [&](const std::string& from, const std::string& to, const std::string& words) {
    test::expect_refused(text, from, to, words);
  };
  refused("\"k_format\": \"int4\"", "\"k_format\": \"int3\"", "problem.k_format \"int3\" is not a stored format");
  refused("\"v_format\": \"q8_0\"", "\"v_format\": \"f16\"", "problem.v_format \"f16\" does not come with dtype bf16");
  refused("\"k_scale_granularity\": \"per_kv_head_channel\"", "\"k_scale_granularity\": \"per_row\"",
          "problem.k_scale_granularity \"per_row\"");
  refused("\"k_scale_granularity\": \"per_kv_head_channel\"", "\"k_scale_granularity\": \"per_tensor\"",
          "problem.k_scales");  // 4 scales where per tensor needs 1
  refused("\"k_format\": \"int4\"", "\"k_format\": \"q4_0\"", "not a whole number of q4_0 units");  // head_dim 4
  refused("\"v_format\": \"q8_0\"", "\"v_format\": \"int8\"", "problem.v_scales holds 6 elements");  // 6 d's, 1 scale
}

}  // namespace
}  // namespace attncheck
