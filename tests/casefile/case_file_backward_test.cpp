// Case files of backward problems (Problem::dout, the gradient view layouts):
// they survive writing and reading bit for bit in every dtype, with every ABI
// v2 feature and strided gradient views; the case hash covers them; damaged
// gradient fields are refused naming the field; and a forward file written
// before gradients existed loads, writes back to the same text and keeps its
// name (its hash).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "gen/generators.h"

namespace attncheck {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A backward problem with every v2 feature: 4 query heads over 2 kv heads, a
// broadcast mask and bias, lengths (batch 1 has one row: its rows 1 and 2 are
// padding, and dout holds NaN and a huge value there), a window, a soft-cap,
// ALiBi, sinks, lse, strided forward views, and gradient views each its own
// (dout BSHD with gaps, dq like q, dk and dv different from k and v).
Problem backward_problem(DType t) {
  Problem p = make_problem(t, Shape{2, 4, 3, 5, 2, 3, 2}, Causal::bottom_right, 0.375);
  int n = 0;
  for (auto* tensor : {&p.q, &p.k, &p.v})
    for (double& x : *tensor) x = round_to(t, 0.25 * (n++ % 13) - 1.5);
  p.mask_broadcast = Broadcast{false, true, true};
  p.mask.resize(p.mask_broadcast.size(p.shape));
  for (std::size_t i = 0; i < p.mask.size(); ++i) p.mask[i] = i % 4 != 1;
  p.bias_broadcast = Broadcast{true, false, true};
  p.bias.resize(p.bias_broadcast.size(p.shape));
  for (std::size_t i = 0; i < p.bias.size(); ++i) p.bias[i] = i % 7 == 3 ? -kInf : round_to(t, 0.5 * (i % 5) - 1);
  p.q_lens = {3, 1};
  p.kv_lens = {5, 4};
  p.window_left = 2;
  p.softcap = 30;
  p.alibi_slopes = {0.25, 0.0625, 0x1p-6, 0x1p-8};
  p.sinks = {-1.5, 0, 80, -0x1.4p+3};
  p.lse_requested = true;
  p.layouts.q.order = {0, 2, 1};
  p.layouts.k.gap = {1, 0, 3};
  p.layouts.out.order = {1, 2, 0};
  // [batch][heads][q_len][value_dim]: -0 and small values, garbage in padding rows.
  p.dout.resize(static_cast<std::size_t>(p.shape.out_size()));
  for (std::size_t i = 0; i < p.dout.size(); ++i) p.dout[i] = i % 5 == 0 ? -0.0 : round_to(t, 0.125 * (i % 11) - 0.5);
  for (int64_t h = 0; h < 4; ++h) {
    for (int64_t c = 0; c < 3; ++c) {
      p.dout[p.out_at(4 + h, 1, c)] = -kNaN;
      p.dout[p.out_at(4 + h, 2, c)] = max_finite(t);
    }
  }
  p.layouts.dout = {{0, 2, 1}, {0, 1, 2}};
  p.layouts.dq = p.layouts.q;
  p.layouts.dk = {{2, 1, 0}, {0, 5, 0}};
  p.layouts.dv = {{1, 0, 2}, {17, 0, 1}};
  return p;
}

CaseRecord record_of(const Problem& p) {
  CaseRecord r;
  r.problem = p;
  r.law = "grad_matches_oracle";
  r.implementation = "online";
  r.source = "builtin:online";
  r.found_by = "libfuzzer";
  r.seed = 11;
  r.date = "2026-12-01T19:00:00Z";
  return r;
}

// Bit for bit; NaN equals NaN of the same sign (the file keeps the sign).
bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::isnan(a[i]) ? !(std::isnan(b[i]) && std::signbit(a[i]) == std::signbit(b[i]))
                         : std::bit_cast<uint64_t>(a[i]) != std::bit_cast<uint64_t>(b[i]))
      return false;
  return true;
}

// What a round trip must keep of a backward problem beyond the forward fields
// (case_file_v2_test.cpp checks those; the text and the hash below cover them too).
void expect_same_gradients(const Problem& a, const Problem& b) {
  EXPECT_TRUE(same_values(a.dout, b.dout));
  EXPECT_EQ(a.layouts, b.layouts);
  EXPECT_EQ(a.features(), b.features());
  EXPECT_TRUE(same_values(a.q, b.q));
  EXPECT_EQ(a.shape, b.shape);
}

class BackwardCase : public testing::TestWithParam<DType> {};

TEST_P(BackwardCase, EveryFieldRoundTrips) {
  const Problem p = backward_problem(GetParam());
  ASSERT_EQ(p.inconsistency(), "");
  ASSERT_EQ(p.features(), kEveryFeature);
  const CaseRecord rec = record_of(p);
  const std::string text = case_to_json(rec);
  EXPECT_NE(text.find("\"schema_version\": 2,\n"), std::string::npos);
  EXPECT_NE(text.find("\"dout\": [\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\"dv\": {\"order\": [\"head\", \"batch\", \"row\"], \"gap\": {\"batch\": 17, \"head\": 0, \"row\": 1}}"),
            std::string::npos) << text;
  const CaseRecord back = case_from_json(text, "memory");
  EXPECT_TRUE(back.problem.is_backward());
  expect_same_gradients(p, back.problem);
  EXPECT_EQ(case_to_json(back), text);  // the text is stable
  EXPECT_EQ(case_content_hash(back), case_content_hash(rec));
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, BackwardCase, testing::ValuesIn(every_dtype()),
                         [](const testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

// The hash (so the file name) tells apart a backward problem from its forward
// part, and two backward problems that differ in one dout element, one
// padding row's garbage or one gradient view.
TEST(BackwardCaseHash, CoversDoutAndTheGradientViews) {
  const Problem p = backward_problem(DType::f32);
  const uint64_t h = case_content_hash(record_of(p));
  Problem forward = p;
  forward.dout.clear();
  forward.layouts.dout = forward.layouts.dq = forward.layouts.dk = forward.layouts.dv = TensorLayout{};
  ASSERT_EQ(forward.inconsistency(), "");
  EXPECT_NE(case_content_hash(record_of(forward)), h);
  Problem one_element = p;
  one_element.dout[1] = 0.25;
  EXPECT_NE(case_content_hash(record_of(one_element)), h);
  Problem padding = p;
  padding.dout[padding.out_at(4, 2, 0)] = kNaN;
  EXPECT_NE(case_content_hash(record_of(padding)), h);
  for (TensorLayout ViewLayouts::*view : {&ViewLayouts::dout, &ViewLayouts::dq, &ViewLayouts::dk, &ViewLayouts::dv}) {
    Problem moved = p;
    (moved.layouts.*view).gap[2] += 1;
    EXPECT_NE(case_content_hash(record_of(moved)), h);
  }
  // A backward problem of v1 features alone (dense views) still needs schema 2.
  Problem plain = make_problem(DType::f64, Shape{1, 1, 2, 2, 1, 1});
  plain.dout = {1, -2};
  const std::string text = case_to_json(record_of(plain));
  EXPECT_NE(text.find("\"schema_version\": 2,\n"), std::string::npos) << text;
  expect_same_gradients(plain, case_from_json(text, "plain").problem);
}

TEST(BackwardCase, GeneratedProblemsRoundTrip) {
  GenOptions g;
  g.dtypes = every_dtype();
  g.features = kEveryFeature;
  g.required = kBackwardFeature;
  g.max_q_len = g.max_kv_len = g.max_head_dim = g.max_value_dim = 12;
  int strided_gradients = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const Problem p = sample_problem(g, seed, static_cast<int>(seed % 101));
    ASSERT_TRUE(p.is_backward());
    strided_gradients += !p.layouts.gradients_dense();
    const CaseRecord rec = record_of(p);
    const std::string text = case_to_json(rec);
    const CaseRecord back = case_from_json(text, "seed " + std::to_string(seed));
    SCOPED_TRACE(seed);
    expect_same_gradients(p, back.problem);
    EXPECT_EQ(case_to_json(back), text);
    EXPECT_EQ(case_content_hash(back), case_content_hash(rec));
  }
  EXPECT_GT(strided_gradients, 40);
}

// --- Damaged gradient fields -----------------------------------------------------

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The text from "\"dout\": [" to the end of the array.
std::string dout_array(const std::string& text) {
  const auto at = text.find("\"dout\": [");
  return text.substr(at, text.find(']', at) + 1 - at);
}

TEST(DamagedBackwardCase, EachClassIsRefusedNamingTheField) {
  Problem small = make_problem(DType::f32, Shape{1, 2, 1, 2, 1, 3});
  small.dout = {1, 2, 3, 4, 5, 6};
  small.layouts.dk.gap = {0, 0, 2};
  const std::string v = case_to_json(record_of(small));
  const std::string dout = dout_array(v);
  ASSERT_EQ(dout, "\"dout\": [\n      \"0x1p+0\", \"0x1p+1\", \"0x1.8p+1\",\n      \"0x1p+2\", \"0x1.4p+2\", \"0x1.8p+2\"\n    ]");
  const std::string dk = "\"dk\": {\"order\": [\"batch\", \"head\", \"row\"], \"gap\": {\"batch\": 0, \"head\": 0, \"row\": 2}}";
  const std::string forward = replaced(v, ",\n    " + dout, "");
  const struct { const char* label; std::string text; const char* expected; } damages[] = {
      {"dout short", replaced(v, ", \"0x1.8p+2\"", ""), "problem.dout holds 5 elements but the shape needs 6"},
      {"dout long", replaced(v, "\"0x1.8p+2\"", "\"0x1.8p+2\", 1"), "problem.dout holds 7 elements but the shape needs 6"},
      {"dout not an array", replaced(v, dout, "\"dout\": \"0x1p+0\""), "problem.dout must be an array"},
      {"dout not representable", replaced(v, "\"0x1p+0\", \"0x1p+1\"", "\"0x1p+0\", 0.1"), "problem.dout[1] = 0.1 is not representable in f32"},
      {"dout not a number", replaced(v, "\"0x1p+0\", \"0x1p+1\"", "\"0x1p+0\", \"two\""), "problem.dout[1]"},
      {"dout element an object", replaced(v, "\"0x1p+0\", \"0x1p+1\"", "{}, \"0x1p+1\""), "problem.dout[0] must be a hex-float string or a number"},
      {"gradient views without dout", forward, "problem.layouts.dout is given but problem.dout is not"},
      {"gradient view negative gap", replaced(v, dk, "\"dk\": {\"gap\": {\"row\": -2}}"), "problem.layouts.dk.gap.row"},
      {"gradient view huge gap", replaced(v, dk, "\"dk\": {\"gap\": {\"batch\": 67108864}}"), "problem.layouts.dk spans more than"},
      {"gradient view axis twice", replaced(v, dk, "\"dk\": {\"order\": [\"head\", \"head\", \"row\"]}"), "problem.layouts.dk.order names head twice"},
      {"gradient view not an object", replaced(v, dk, "\"dk\": 1"), "problem.layouts.dk must be an object"},
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
  // dout alone in a schema-1 file is refused by name.
  Problem v1 = small;
  v1.dout.clear();
  v1.layouts = ViewLayouts{};
  const std::string one = replaced(case_to_json(record_of(v1)), "\"mask\": null", "\"mask\": null, \"dout\": [1, 2, 3, 4, 5, 6]");
  try {
    case_from_json(one, "one.json");
    ADD_FAILURE() << "dout in a schema-1 file was accepted";
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find("one.json: problem.dout needs schema_version 2"), std::string::npos) << e.what();
  }
}

// A forward file of schema 2 written by attncheck before gradients existed
// (commit 88e7254, every ABI v2 feature): it loads as a forward problem,
// writes back to the same text, and its hash still gives its file name.
TEST(BackwardCase, ForwardFileFromBeforeGradientsLoadsUnchanged) {
  namespace fs = std::filesystem;
  const fs::path path = fs::path(ATTNCHECK_CASEFILE_TEST_DIR) / "before-gradients" / "matches_oracle-38408177d3ebd15e.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const CaseRecord rec = load_case(path.string());
  EXPECT_EQ(rec.schema_version, 2);
  EXPECT_FALSE(rec.problem.is_backward());
  EXPECT_TRUE(rec.problem.layouts.gradients_dense());
  EXPECT_EQ(rec.problem.features(), kAllFeatures);
  EXPECT_EQ(case_to_json(rec), text.str());
  EXPECT_EQ(case_file_name(rec), path.filename().string());
}

}  // namespace
}  // namespace attncheck
