// Case files of schema 2: every ABI v2 field of a Problem survives writing
// and reading bit for bit, a problem that uses none of them is still written
// as schema 1 (same text, same hash, same name), generated v2 problems round
// trip, and each kind of damage to a schema-2 field is refused naming the
// file and the field.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "casefile/case_json_v2.h"
#include "casefile/float_text.h"
#include "gen/generators.h"

namespace attncheck {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Every v2 field at once, each with a value that is easy to get wrong: 4 query
// heads over 2 kv heads, a mask broadcast over batch and a bias over heads
// (with -inf, and NaN where only padding reads it), lengths of 0 and short,
// a one-sided window, a soft-cap, ALiBi slopes, sinks, lse, and four different layouts.
Problem v2_problem(DType t) {
  Problem p = make_problem(t, Shape{2, 4, 3, 5, 2, 3, 2}, Causal::bottom_right, 0.375);
  int n = 0;
  for (auto* tensor : {&p.q, &p.k, &p.v})
    for (double& x : *tensor) x = round_to(t, 0.25 * (n++ % 13) - 1.5);
  p.q[p.q_at(5, 2, 1)] = std::numeric_limits<double>::quiet_NaN();  // batch 1, row 2: padding (q_lens[1] = 1)
  p.mask_broadcast = Broadcast{false, true, true};
  p.mask.resize(p.mask_broadcast.size(p.shape));
  for (std::size_t i = 0; i < p.mask.size(); ++i) p.mask[i] = i % 4 != 1;
  p.bias_broadcast = Broadcast{true, false, true};
  p.bias.resize(p.bias_broadcast.size(p.shape));
  for (std::size_t i = 0; i < p.bias.size(); ++i) p.bias[i] = i % 7 == 3 ? -kInf : round_to(t, 0.5 * (i % 5) - 1);
  p.q_lens = {3, 1};
  p.kv_lens = {5, 0};
  p.bias[p.bias_at(4, 2, 4)] = std::numeric_limits<double>::quiet_NaN();  // batch 1 reads no key
  p.window_left = 2;
  p.softcap = 30;
  p.alibi_slopes = {0.25, 0.0625, 0x1p-6, 0x1p-8};
  p.sinks = {-1.5, 0, 80, -0x1.4p+3};
  p.lse_requested = true;
  p.layouts.q.order = {0, 2, 1};  // BSHD
  p.layouts.k.order = {2, 0, 1};
  p.layouts.k.gap = {1, 0, 3};
  p.layouts.v.gap = {0, 17, 0};
  p.layouts.out.order = {1, 2, 0};
  p.layouts.out.gap = {2, 2, 2};
  return p;
}

CaseRecord record_of(const Problem& p) {
  CaseRecord r;
  r.problem = p;
  r.law = "matches_oracle";
  r.implementation = "online";
  r.source = "builtin:online";
  r.found_by = "rapidcheck";
  r.seed = 7;
  r.date = "2026-12-01T12:00:00Z";
  return r;
}

// Bit for bit; NaN equals NaN of the same sign (the file keeps the sign).
bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) ? !(std::isnan(b[i]) && std::signbit(a[i]) == std::signbit(b[i]))
                         : std::bit_cast<uint64_t>(a[i]) != std::bit_cast<uint64_t>(b[i]))
      return false;
  }
  return true;
}

void expect_same_problem(const Problem& a, const Problem& b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.shape.kv_head_count(), b.shape.kv_head_count());
  EXPECT_EQ(a.causal, b.causal);
  EXPECT_TRUE(same_values({a.scale}, {b.scale}));
  EXPECT_TRUE(same_values(a.q, b.q));
  EXPECT_TRUE(same_values(a.k, b.k));
  EXPECT_TRUE(same_values(a.v, b.v));
  EXPECT_EQ(a.mask, b.mask);
  if (a.has_mask()) {
    EXPECT_EQ(a.mask_broadcast, b.mask_broadcast);
  }
  EXPECT_TRUE(same_values(a.bias, b.bias));
  if (a.has_bias()) {
    EXPECT_EQ(a.bias_broadcast, b.bias_broadcast);
  }
  EXPECT_EQ(a.q_lens, b.q_lens);
  EXPECT_EQ(a.kv_lens, b.kv_lens);
  EXPECT_EQ(a.window_left, b.window_left);
  EXPECT_EQ(a.window_right, b.window_right);
  EXPECT_TRUE(same_values({a.softcap}, {b.softcap}));
  EXPECT_TRUE(same_values(a.alibi_slopes, b.alibi_slopes));
  EXPECT_TRUE(same_values(a.sinks, b.sinks));
  EXPECT_EQ(a.lse_requested, b.lse_requested);
  EXPECT_EQ(a.layouts, b.layouts);
  EXPECT_EQ(a.features(), b.features());
}

class SchemaTwo : public testing::TestWithParam<DType> {};

TEST_P(SchemaTwo, EveryFieldRoundTrips) {
  const Problem p = v2_problem(GetParam());
  ASSERT_EQ(p.inconsistency(), "");
  ASSERT_EQ(p.features(), kAllFeatures);
  const CaseRecord rec = record_of(p);
  const std::string text = case_to_json(rec);
  EXPECT_NE(text.find("\"schema_version\": 2,\n"), std::string::npos) << text;
  const CaseRecord back = case_from_json(text, "memory");
  EXPECT_EQ(back.schema_version, 2);
  expect_same_problem(p, back.problem);
  EXPECT_EQ(case_to_json(back), text);  // the text is stable
  EXPECT_EQ(case_content_hash(back), case_content_hash(rec));
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, SchemaTwo, testing::ValuesIn(every_dtype()),
                         [](const testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

// One v2 field on a v1 problem: schema 2, a round trip, and a hash of its own.
TEST(SchemaTwoField, EachAloneNeedsSchemaTwoAndRoundTrips) {
  const Problem base = [] {
    Problem p = make_problem(DType::f32, Shape{2, 2, 2, 3, 2, 2}, Causal::none);
    for (std::size_t i = 0; i < p.q.size(); ++i) p.q[i] = 0.5 * static_cast<double>(i % 5);
    for (std::size_t i = 0; i < p.k.size(); ++i) p.k[i] = -0.25 * static_cast<double>(i % 3);
    p.mask.assign(p.shape.mask_size(), 1);
    return p;
  }();
  const std::pair<const char*, void (*)(Problem&)> edits[] = {
      {"kv_heads", [](Problem& p) { p.shape.kv_heads = 1; p.k.resize(p.shape.k_size()); p.v.resize(p.shape.v_size()); }},
      {"mask_broadcast", [](Problem& p) { p.mask_broadcast = Broadcast{true, false, true}; p.mask.assign(p.mask_broadcast.size(p.shape), 0); p.mask[1] = 1; }},
      {"bias", [](Problem& p) { p.bias.assign(p.shape.mask_size(), -0.5); p.bias[3] = -kInf; }},
      {"bias broadcast", [](Problem& p) { p.bias_broadcast = Broadcast{false, false, false}; p.bias = {0.5, -kInf, 2}; }},
      {"q_lens", [](Problem& p) { p.q_lens = {0, 2}; }},
      {"kv_lens", [](Problem& p) { p.kv_lens = {3, 1}; }},
      {"window_left", [](Problem& p) { p.window_left = 0; }},
      {"window_right", [](Problem& p) { p.window_right = 5; }},
      {"softcap", [](Problem& p) { p.softcap = 0.1; }},
      {"alibi_slopes", [](Problem& p) { p.alibi_slopes = {0.0625, -0.0}; }},
      {"sinks", [](Problem& p) { p.sinks = {-1e30f, 3}; }},
      {"lse_requested", [](Problem& p) { p.lse_requested = true; }},
      {"layout q", [](Problem& p) { p.layouts.q.order = {0, 2, 1}; }},
      {"layout k", [](Problem& p) { p.layouts.k.gap = {0, 0, 1}; }},
      {"layout v", [](Problem& p) { p.layouts.v.order = {2, 1, 0}; }},
      {"layout out", [](Problem& p) { p.layouts.out.gap = {5, 0, 0}; }},
  };
  const uint64_t base_hash = case_content_hash(record_of(base));
  EXPECT_FALSE(needs_schema_2(base));
  for (const auto& [what, edit] : edits) {
    Problem p = base;
    edit(p);
    ASSERT_EQ(p.inconsistency(), "") << what;
    EXPECT_TRUE(needs_schema_2(p)) << what;
    const CaseRecord rec = record_of(p);
    const std::string text = case_to_json(rec);
    const CaseRecord back = case_from_json(text, what);
    SCOPED_TRACE(what);
    expect_same_problem(p, back.problem);
    EXPECT_EQ(case_to_json(back), text);
    EXPECT_NE(case_content_hash(rec), base_hash);
  }
}

// A problem of v1 features is written as schema 1: no v2 key appears, and a
// kv_heads written out as heads (make_problem does) changes nothing.
TEST(SchemaTwoField, V1ProblemsAreWrittenAsSchemaOne) {
  Problem p = make_problem(DType::bf16, Shape{1, 2, 2, 2, 1, 1}, Causal::top_left);
  p.mask.assign(p.shape.mask_size(), 1);
  ASSERT_EQ(p.shape.kv_heads, 2);
  const std::string text = case_to_json(record_of(p));
  EXPECT_NE(text.find("\"schema_version\": 1,\n"), std::string::npos) << text;
  for (const char* key : {"kv_heads", "broadcast", "bias", "lens", "window", "softcap", "alibi", "sinks", "lse", "layouts"})
    EXPECT_EQ(text.find(key), std::string::npos) << key;
  Problem implicit = p;
  implicit.shape.kv_heads = 0;
  EXPECT_EQ(case_to_json(record_of(implicit)), text);
  EXPECT_EQ(case_content_hash(record_of(implicit)), case_content_hash(record_of(p)));
  EXPECT_EQ(case_from_json(text, "memory").schema_version, 1);
}

// A hand-written schema-2 case gives only what it uses.
TEST(SchemaTwoField, AbsentFieldsAreNeutral) {
  const std::string text = R"({"schema_version": 2, "law": "matches_oracle",
    "problem": {"dtype": "f32", "batch": 1, "heads": 2, "kv_heads": 1, "q_len": 1, "kv_len": 2, "head_dim": 1,
                "value_dim": 1, "causal": "none", "scale": "default", "q": [1, 2], "k": [0.5, -1], "v": [1, 0],
                "mask": null, "softcap": 20}})";
  const Problem p = case_from_json(text, "hand.json").problem;
  EXPECT_EQ(p.shape.kv_head_count(), 1);
  EXPECT_EQ(p.softcap, 20);
  EXPECT_EQ(p.features(), static_cast<FeatureBits>(ATTNCHECK_FEATURE_GQA | ATTNCHECK_FEATURE_SOFTCAP));
  EXPECT_TRUE(p.layouts.all_dense());
  EXPECT_EQ(p.window_left, -1);
}

TEST(SchemaTwoField, GeneratedProblemsRoundTrip) {
  GenOptions g;
  g.dtypes = every_dtype();
  g.features = kAllFeatures;
  g.max_q_len = g.max_kv_len = g.max_head_dim = g.max_value_dim = 12;
  int v2 = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const Problem p = sample_problem(g, seed, static_cast<int>(seed % 101));
    const CaseRecord rec = record_of(p);
    const std::string text = case_to_json(rec);
    const CaseRecord back = case_from_json(text, "seed " + std::to_string(seed));
    SCOPED_TRACE(seed);
    expect_same_problem(p, back.problem);
    EXPECT_EQ(case_to_json(back), text);
    EXPECT_EQ(case_content_hash(back), case_content_hash(rec));
    v2 += back.schema_version == 2;
  }
  EXPECT_GT(v2, 200);
}

// --- Damaged schema-2 files --------------------------------------------------

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(DamagedSchemaTwo, EachClassIsRefusedNamingTheFileAndTheField) {
  const std::string v = case_to_json(record_of(v2_problem(DType::f32)));
  const std::string mask_bc = "\"mask_broadcast\": {\"per_batch\": false, \"per_head\": true, \"per_row\": true}";
  const std::string q_layout = "\"q\": {\"order\": [\"batch\", \"row\", \"head\"], \"gap\": {\"batch\": 0, \"head\": 0, \"row\": 0}}";
  const struct { const char* label; std::string text; const char* expected; } damages[] = {
      {"kv_heads not dividing", replaced(v, "\"kv_heads\": 2", "\"kv_heads\": 3"), "does not divide heads"},
      {"kv_heads zero", replaced(v, "\"kv_heads\": 2", "\"kv_heads\": 0"), "problem.kv_heads"},
      {"kv_heads above heads", replaced(v, "\"kv_heads\": 2", "\"kv_heads\": 8"), "problem.kv_heads"},
      {"kv_heads huge", replaced(v, "\"kv_heads\": 2", "\"kv_heads\": 18446744073709551615"), "problem.kv_heads"},
      {"k sized for kv_heads", replaced(v, "\"kv_heads\": 2", "\"kv_heads\": 4"), "problem.k holds"},
      {"mask_broadcast not an object", replaced(v, mask_bc, "\"mask_broadcast\": [1]"), "problem.mask_broadcast"},
      {"mask_broadcast flag", replaced(v, "\"per_batch\": false", "\"per_batch\": 0"), "problem.mask_broadcast.per_batch"},
      {"mask sized by broadcast", replaced(v, "\"per_batch\": false", "\"per_batch\": true"), "problem.mask holds 60"},
      {"bias +inf", replaced(v, "\"-inf\"", "\"inf\""), "+inf"},
      {"bias short", replaced(v, "\"bias\": [\n      \"-0x1p+0\", ", "\"bias\": [\n      "), "problem.bias holds"},
      {"bias not representable", replaced(v, "\"bias\": [\n      \"-0x1p+0\"", "\"bias\": [\n      \"0x1.000001p+0\""), "problem.bias[0]"},
      {"bias not a number", replaced(v, "\"bias\": [\n      \"-0x1p+0\"", "\"bias\": [\n      true"), "problem.bias[0]"},
      {"bias_broadcast not an object", replaced(v, "\"bias_broadcast\": {", "\"bias_broadcast\": 1, \"x\": {"), "problem.bias_broadcast"},
      {"q_lens short", replaced(v, "\"q_lens\": [3, 1]", "\"q_lens\": [3]"), "problem.q_lens holds"},
      {"q_lens too long", replaced(v, "\"q_lens\": [3, 1]", "\"q_lens\": [4, 1]"), "problem.q_lens[0]"},
      {"kv_lens negative", replaced(v, "\"kv_lens\": [5, 0]", "\"kv_lens\": [5, -1]"), "problem.kv_lens[1]"},
      {"kv_lens not an array", replaced(v, "\"kv_lens\": [5, 0]", "\"kv_lens\": 5"), "problem.kv_lens"},
      {"window below -1", replaced(v, "\"window_left\": 2", "\"window_left\": -2"), "problem.window_left"},
      {"window fractional", replaced(v, "\"window_right\": -1", "\"window_right\": 1.5"), "problem.window_right"},
      {"softcap negative", replaced(v, "\"softcap\": 30.0", "\"softcap\": -1"), "problem.softcap"},
      {"softcap infinite", replaced(v, "\"softcap\": 30.0", "\"softcap\": \"inf\""), "problem.softcap"},
      {"softcap not a number", replaced(v, "\"softcap\": 30.0", "\"softcap\": [1]"), "problem.softcap"},
      {"alibi short", replaced(v, "\"alibi_slopes\": [\n      \"0x1p-2\", ", "\"alibi_slopes\": [\n      "), "problem.alibi_slopes holds"},
      {"alibi not float", replaced(v, "\"alibi_slopes\": [\n      \"0x1p-2\"", "\"alibi_slopes\": [\n      0.1"), "not representable in f32"},
      {"sinks NaN", replaced(v, "\"sinks\": [\n      \"-0x1.8p+0\"", "\"sinks\": [\n      \"nan\""), "problem.sinks[0] must be finite"},
      {"lse not boolean", replaced(v, "\"lse_requested\": true", "\"lse_requested\": 1"), "problem.lse_requested"},
      {"layouts not an object", replaced(v, "\"layouts\": {", "\"layouts\": 3, \"x\": {"), "problem.layouts"},
      {"layout axis twice", replaced(v, q_layout, "\"q\": {\"order\": [\"batch\", \"row\", \"row\"]}"), "problem.layouts.q.order names row twice"},
      {"layout unknown axis", replaced(v, q_layout, "\"q\": {\"order\": [\"seq\", \"row\", \"head\"]}"), "problem.layouts.q.order[0]"},
      {"layout two axes", replaced(v, q_layout, "\"q\": {\"order\": [\"batch\", \"row\"]}"), "problem.layouts.q.order"},
      {"layout negative gap", replaced(v, "\"gap\": {\"batch\": 1", "\"gap\": {\"batch\": -1"), "problem.layouts.k.gap.batch"},
      {"layout huge gap", replaced(v, "\"gap\": {\"batch\": 1", "\"gap\": {\"batch\": 67108864"), "problem.layouts.k spans more than"},
      {"layout gap not an object", replaced(v, "\"gap\": {\"batch\": 1, \"head\": 0, \"row\": 3}", "\"gap\": [1, 0, 3]"), "problem.layouts.k.gap"},
  };
  for (const auto& d : damages) {
    try {
      case_from_json(d.text, "damaged.json");
      ADD_FAILURE() << d.label << ": was accepted";
    } catch (const CaseFileError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("damaged.json: ", 0), 0u) << d.label << ": " << what;
      EXPECT_NE(what.find(d.expected), std::string::npos) << d.label << ": " << what;
    }
  }
}

}  // namespace
}  // namespace attncheck
