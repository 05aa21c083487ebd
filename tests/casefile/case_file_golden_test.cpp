// The case file format and the case hash, pinned: three fixed problems (v1,
// every ABI v2 field, backward) must give exactly the text and the file name
// they gave before the formats were derived from one field list (issue #31).
// A file on disk is named by its hash and replayed from its text, so neither
// may drift: the files in golden/ were written by the hand-kept writer of
// commit 4bdf16a, and their names are the hashes it gave.
#include <gtest/gtest.h>

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

// A v1 problem: a mask, top-left causal, an explicit scale, -0, NaN and a subnormal.
Problem v1_problem() {
  Problem p = make_problem(DType::f32, Shape{2, 2, 3, 4, 2, 3}, Causal::top_left, 0.3125);
  int n = 0;
  for (auto* t : {&p.q, &p.k, &p.v})
    for (double& x : *t) x = 0.25 * (n++ % 11) - 1.25;
  p.q[1] = -0.0;
  p.k[2] = -kNaN;
  p.v[3] = 0x1p-140;
  p.mask.resize(p.shape.mask_size());
  for (std::size_t i = 0; i < p.mask.size(); ++i) p.mask[i] = i % 5 != 2;
  return p;
}

// Every ABI v2 field, forward.
Problem v2_problem() {
  Problem p = make_problem(DType::bf16, Shape{2, 4, 3, 5, 2, 3, 2}, Causal::bottom_right);
  int n = 0;
  for (auto* t : {&p.q, &p.k, &p.v})
    for (double& x : *t) x = 0.5 * (n++ % 9) - 2;
  p.mask_broadcast = Broadcast{false, true, true};
  p.mask.resize(p.mask_broadcast.size(p.shape));
  for (std::size_t i = 0; i < p.mask.size(); ++i) p.mask[i] = i % 4 != 1;
  p.bias_broadcast = Broadcast{true, false, true};
  p.bias.resize(p.bias_broadcast.size(p.shape));
  for (std::size_t i = 0; i < p.bias.size(); ++i) p.bias[i] = i % 7 == 3 ? -kInf : 0.5 * (i % 5) - 1;
  p.q_lens = {3, 1};
  p.kv_lens = {5, 2};
  p.window_left = 2;
  p.window_right = 7;
  p.softcap = 30;
  p.alibi_slopes = {0.25, 0.0625, 0x1p-6, 0x1p-8};
  p.sinks = {-1.5, 0, 80, -0x1.4p+3};
  p.lse_requested = true;
  p.layouts.q.order = {0, 2, 1};
  p.layouts.k.order = {2, 0, 1};
  p.layouts.k.gap = {1, 0, 3};
  p.layouts.v.gap = {0, 17, 0};
  p.layouts.out.order = {1, 2, 0};
  p.layouts.out.gap = {2, 2, 2};
  return p;
}

// A backward problem with strided gradient views and grouped heads.
Problem backward_problem() {
  Problem p = make_problem(DType::f16, Shape{1, 2, 2, 3, 2, 2, 1}, Causal::none, -0.5);
  int n = 0;
  for (auto* t : {&p.q, &p.k, &p.v})
    for (double& x : *t) x = 0.125 * (n++ % 7) - 0.25;
  p.dout.resize(p.shape.out_size());
  for (std::size_t i = 0; i < p.dout.size(); ++i) p.dout[i] = 1.0 - 0.75 * static_cast<double>(i % 3);
  p.layouts.dout.order = {0, 2, 1};
  p.layouts.dq.gap = {0, 1, 0};
  p.layouts.dk.gap = {4, 0, 0};
  p.layouts.dv.order = {2, 1, 0};
  return p;
}

CaseRecord record_of(const Problem& p, const std::string& law) {
  CaseRecord r;
  r.problem = p;
  r.law = law;
  r.implementation = "online";
  r.source = "builtin:online";
  r.found_by = "rapidcheck";
  r.seed = 20261206;
  r.message = "out[0] = 1 differs";
  r.date = "2026-12-06T12:00:00Z";
  return r;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

struct Golden {
  const char* what;
  CaseRecord rec;
  const char* file_name;  // the hash as the hand-kept code gave it
};

std::vector<Golden> goldens() {
  return {{"v1", record_of(v1_problem(), "matches_oracle"), "matches_oracle-d138454a741069d3.json"},
          {"v2", record_of(v2_problem(), "softcap_bounds"), "softcap_bounds-b174a66f738dfae7.json"},
          {"backward", record_of(backward_problem(), "grad_matches_oracle"), "grad_matches_oracle-386cc8137e3deca4.json"}};
}

TEST(CaseFileGolden, TextAndNameAreAsBefore) {
  for (const Golden& g : goldens()) {
    SCOPED_TRACE(g.what);
    ASSERT_EQ(g.rec.problem.inconsistency(), "");
    const std::string text = case_to_json(g.rec);
    EXPECT_EQ(case_file_name(g.rec), g.file_name);
    EXPECT_EQ(text, read_text(std::string(ATTNCHECK_CASEFILE_TEST_DIR) + "/golden/" + g.file_name)) << text;
  }
}

// Every case file in the repository (regression/cases, the fixtures here):
// the hash of what it holds is still the one in its name, and writing what
// was read gives its text again.
TEST(CaseFileGolden, EveryCaseFileKeepsItsNameAndText) {
  namespace fs = std::filesystem;
  const fs::path here = ATTNCHECK_CASEFILE_TEST_DIR;
  int files = 0;
  for (const fs::path& dir : {here / "golden", here / "before-gradients", here / ".." / ".." / "regression" / "cases"}) {
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".json") continue;
      SCOPED_TRACE(entry.path().string());
      const std::string name = entry.path().filename().string(), text = read_text(entry.path().string());
      const CaseRecord rec = case_from_json(text, name);
      const std::string derived = case_file_name(rec);
      // The hash is the name's last 16 hex digits (a prefix such as "torch-" is the saver's).
      EXPECT_EQ(name.substr(name.size() - 21), derived.substr(derived.size() - 21));
      EXPECT_EQ(case_to_json(rec), text);
      ++files;
    }
  }
  EXPECT_GE(files, 30);
}

// Drawn problems with every feature (backward ones among them) and of v1
// features alone come back from their file as the same value, compared whole
// (Problem::operator==: doubles by their bits).
TEST(CaseFileRoundTrip, DrawnProblemsComeBackWhole) {
  GenOptions g;
  g.dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  g.features = kEveryFeature;
  g.max_q_len = g.max_kv_len = g.max_head_dim = g.max_value_dim = 12;
  GenOptions v1_only = g;
  v1_only.features = kV1Features;  // schema 1's files
  int v1 = 0, v2 = 0, backward = 0;
  for (uint64_t seed = 0; seed < 500; ++seed) {
    const GenOptions& o = seed % 5 == 0 ? v1_only : g;
    const CaseRecord rec = record_of(sample_problem(o, seed, static_cast<int>(seed % 101)), "matches_oracle");
    const CaseRecord back = case_from_json(case_to_json(rec), "seed " + std::to_string(seed));
    EXPECT_EQ(back.problem, rec.problem) << "seed " << seed << ": " << rec.problem.header();
    v1 += back.schema_version == 1;
    v2 += back.schema_version == 2;
    backward += back.problem.is_backward();
  }
  EXPECT_GT(v1, 20);
  EXPECT_GT(v2, 200);
  EXPECT_GT(backward, 40);
}

}  // namespace
}  // namespace attncheck
