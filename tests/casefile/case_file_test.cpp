// Case files: exact round trips in every dtype, refusal of every kind of
// damaged file (naming the file and the problem, never allocating what an
// absurd shape asks for), idempotent and collision-safe saving, and several
// processes saving into one folder at once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <new>
#include <set>

#include "casefile/case_file.h"
#include "casefile/case_hash.h"
#include "casefile/case_limits.h"
#include "casefile/float_text.h"

// The largest single allocation while `g_watch` is set: proves that an
// absurd shape is refused before anything of its size is allocated.
namespace {
std::atomic<bool> g_watch{false};
std::atomic<std::size_t> g_largest{0};
void* counted_alloc(std::size_t n) {
  if (g_watch.load(std::memory_order_relaxed)) {
    std::size_t prev = g_largest.load();
    while (n > prev && !g_largest.compare_exchange_weak(prev, n)) {}
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace
void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
// The nothrow forms too (std::stable_sort's temporary buffer takes one, and the
// delete above frees it): left to the runtime, they allocate with its operator
// new, which ASan then sees freed by free() (alloc-dealloc-mismatch).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace attncheck {
namespace {
namespace fs = std::filesystem;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string temp_dir() {
  std::string t = (fs::temp_directory_path() / "attncheck_casefile_XXXXXX").string();
  if (!::mkdtemp(t.data())) std::abort();
  return t;
}

struct TempDir {
  std::string path = temp_dir();
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A small problem whose tensors hold every awkward value of the dtype.
Problem awkward_problem(DType t) {
  Problem p = make_problem(t, Shape{2, 1, 3, 4, 5, 3}, Causal::bottom_right, 0.375);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> specials = {nan, -nan, kInf, -kInf, 0.0, -0.0, min_subnormal(t), -min_subnormal(t),
                                        3 * min_subnormal(t), min_normal(t), max_finite(t), -max_finite(t),
                                        1.0, -1.5, round_to(t, 0.1), round_to(t, -1.0 / 3)};
  std::size_t n = 0;
  for (auto* tensor : {&p.q, &p.k, &p.v})
    for (double& x : *tensor) x = specials[n++ % specials.size()];
  p.mask.resize(p.shape.mask_size());
  for (std::size_t i = 0; i < p.mask.size(); ++i) p.mask[i] = (i * 7 % 3) != 0;
  return p;
}

CaseRecord record_of(const Problem& p, const std::string& law = "matches_oracle") {
  CaseRecord r;
  r.problem = p;
  r.law = law;
  r.implementation = "seed_unscaled";
  r.source = "builtin:seed_unscaled";
  r.found_by = "rapidcheck";
  r.message = "worst (0,0,0,0): got 1, oracle 2 \"quoted\"\nsecond line";
  r.diagnosis = "behaves like: scale 1";
  r.date = "2025-01-31T12:00:00Z";
  r.seed = std::numeric_limits<uint64_t>::max();
  return r;
}

// Bit for bit, with NaN equal to NaN of the same sign (the file keeps the sign, not the payload).
void expect_same_tensor(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i])) {
      EXPECT_TRUE(std::isnan(b[i]) && std::signbit(a[i]) == std::signbit(b[i])) << what << "[" << i << "]";
    } else {
      EXPECT_EQ(std::bit_cast<uint64_t>(a[i]), std::bit_cast<uint64_t>(b[i]))
          << what << "[" << i << "]: " << exact_float_text(a[i]) << " vs " << exact_float_text(b[i]);
    }
  }
}

void expect_same_record(const CaseRecord& a, const CaseRecord& b) {
  EXPECT_EQ(a.law, b.law);
  EXPECT_EQ(a.problem.dtype, b.problem.dtype);
  EXPECT_EQ(a.problem.shape, b.problem.shape);
  EXPECT_EQ(a.problem.causal, b.problem.causal);
  EXPECT_EQ(std::isnan(a.problem.scale), std::isnan(b.problem.scale));
  if (!std::isnan(a.problem.scale)) {
    EXPECT_EQ(std::bit_cast<uint64_t>(a.problem.scale), std::bit_cast<uint64_t>(b.problem.scale));
  }
  expect_same_tensor(a.problem.q, b.problem.q, "q");
  expect_same_tensor(a.problem.k, b.problem.k, "k");
  expect_same_tensor(a.problem.v, b.problem.v, "v");
  EXPECT_EQ(a.problem.mask, b.problem.mask);
  EXPECT_EQ(a.implementation, b.implementation);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.found_by, b.found_by);
  EXPECT_EQ(a.message, b.message);
  EXPECT_EQ(a.diagnosis, b.diagnosis);
  EXPECT_EQ(a.date, b.date);
  EXPECT_EQ(a.seed, b.seed);
}

TEST(FloatText, WritesAndReadsExactly) {
  EXPECT_EQ(exact_float_text(3.0), "0x1.8p+1");
  EXPECT_EQ(exact_float_text(-0.0), "-0x0p+0");
  EXPECT_EQ(exact_float_text(-std::nan("")), "-nan");
  EXPECT_EQ(exact_float_text(-kInf), "-inf");
  EXPECT_EQ(parse_float_text("0x1.8p+1"), 3.0);
  EXPECT_TRUE(std::signbit(*parse_float_text("-0x0p+0")));
  EXPECT_EQ(parse_float_text("0.5"), 0.5);
  for (const char* bad : {"", " 1", "1 ", "0x1.8p+1x", "abc", "infinity", "nan(1)", "1e999", "-", "0x"})
    EXPECT_FALSE(parse_float_text(bad)) << bad;
}

class RoundTrip : public testing::TestWithParam<DType> {};

TEST_P(RoundTrip, EveryValueBitForBit) {
  const CaseRecord rec = record_of(awkward_problem(GetParam()));
  const std::string text = case_to_json(rec);
  const CaseRecord back = case_from_json(text, "memory");
  expect_same_record(rec, back);
  EXPECT_EQ(case_to_json(back), text);  // the text is stable too
  EXPECT_EQ(case_content_hash(back), case_content_hash(rec));
}

TEST_P(RoundTrip, DefaultAndSignedScales) {
  for (double scale : {std::numeric_limits<double>::quiet_NaN(), -0.0, 0.1, -kInf, 1e-310}) {
    CaseRecord rec = record_of(awkward_problem(GetParam()));
    rec.problem.scale = scale;
    rec.problem.mask.clear();
    const CaseRecord back = case_from_json(case_to_json(rec), "memory");
    expect_same_record(rec, back);
  }
}

TEST_P(RoundTrip, ThroughAFile) {
  TempDir dir;
  const CaseRecord rec = record_of(awkward_problem(GetParam()));
  const std::string path = save_case(rec, dir.path + "/nested/folder");
  expect_same_record(rec, load_case(path));
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, RoundTrip, testing::ValuesIn(every_dtype()),
                         [](const testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

TEST(CaseJson, IsReadable) {
  CaseRecord rec = record_of(make_problem(DType::f32, Shape{1, 1, 2, 2, 2, 1}));
  rec.problem.q = {1.0, -3.0, 0.0, 0.25};
  const std::string text = case_to_json(rec);
  EXPECT_NE(text.find("\"schema_version\": 1,\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\"q\": [\n      \"0x1p+0\", \"-0x1.8p+1\",\n      \"0x0p+0\", \"0x1p-2\"\n    ]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"scale\": \"default\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"mask\": null"), std::string::npos) << text;
}

TEST(CaseJson, AcceptsHandWrittenNumbers) {
  const std::string text = R"({"schema_version": 1, "law": "matches_oracle",
    "problem": {"dtype": "f16", "batch": 1, "heads": 1, "q_len": 1, "kv_len": 2, "head_dim": 1, "value_dim": 1,
                "causal": "none", "scale": 0.5, "q": [1], "k": ["0.5", -2], "v": ["0x1p+0", 3.0], "mask": "10"}})";
  const CaseRecord rec = case_from_json(text, "hand.json");
  EXPECT_EQ(rec.problem.k, (std::vector<double>{0.5, -2.0}));
  EXPECT_EQ(rec.problem.mask, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(rec.problem.scale, 0.5);
  EXPECT_TRUE(rec.source.empty());  // history is optional
}

// A case records what replaying it on its implementation must give: written
// only when it is "fail", so a case that must pass reads as it always did,
// and a file from before the field loads as "pass".
TEST(CaseJson, ExpectIsWrittenWhenFailAndDefaultsToPass) {
  CaseRecord rec = record_of(make_problem(DType::f32, Shape{1, 1, 2, 2, 2, 1}));
  EXPECT_EQ(case_to_json(rec).find("\"expect\""), std::string::npos);
  EXPECT_EQ(case_from_json(case_to_json(rec), "a.json").expect, "pass");
  rec.expect = "fail";
  const std::string text = case_to_json(rec);
  EXPECT_NE(text.find("\"law\": \"matches_oracle\",\n  \"expect\": \"fail\",\n"), std::string::npos) << text;
  EXPECT_EQ(case_from_json(text, "b.json").expect, "fail");
}

// --- Damaged files ----------------------------------------------------------

// A valid case's JSON with one edit applied.
std::string valid_text() { return case_to_json(record_of(awkward_problem(DType::f16))); }

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

struct Damage {
  const char* label;
  std::string text;
  const char* expected;  // a word of the message
};

std::vector<Damage> damages() {
  const std::string v = valid_text();
  const std::string small = R"({"schema_version": 1, "law": "matches_oracle",
    "problem": {"dtype": "f32", "batch": B, "heads": 1, "q_len": Q, "kv_len": 1, "head_dim": 1, "value_dim": 1,
                "causal": "none", "scale": "default", "q": ["0x1p+0"], "k": ["0x1p+0"], "v": ["0x1p+0"], "mask": null}})";
  auto sized = [&](const std::string& b, const std::string& q) { return replaced(replaced(small, "B", b), "Q", q); };
  return {
      {"truncated", v.substr(0, v.size() / 2), "truncated"},
      {"empty", "", "malformed"},
      {"malformed", "{\"schema_version\": 1, law: x}", "malformed"},
      {"not an object", "[1, 2, 3]", "top level"},
      {"deeply nested", std::string(100000, '[') + std::string(100000, ']'), "nest deeper"},
      {"invalid utf-8", replaced(v, "second line", "\xff\xfe"), "malformed"},
      {"schema 3", replaced(v, "\"schema_version\": 1", "\"schema_version\": 3"), "schema_version 3"},
      {"v2 field in schema 1", replaced(v, "\"heads\": 1,", "\"heads\": 1, \"kv_heads\": 1,"), "needs schema_version 2"},
      {"schema missing", replaced(v, "\"schema_version\": 1,", ""), "schema_version"},
      {"schema string", replaced(v, "\"schema_version\": 1", "\"schema_version\": \"1\""), "schema_version"},
      {"law missing", replaced(v, "\"law\": \"matches_oracle\",", ""), "law"},
      {"unknown dtype", replaced(v, "\"dtype\": \"f16\"", "\"dtype\": \"f8\""), "f8"},
      {"unknown causal", replaced(v, "\"causal\": \"bottom_right\"", "\"causal\": \"diagonal\""), "diagonal"},
      {"zero size", replaced(v, "\"heads\": 1", "\"heads\": 0"), "problem.heads"},
      {"negative size", replaced(v, "\"heads\": 1", "\"heads\": -3"), "problem.heads"},
      {"fractional size", replaced(v, "\"heads\": 1", "\"heads\": 1.5"), "integer"},
      {"size as string", replaced(v, "\"heads\": 1", "\"heads\": \"1\""), "integer"},
      {"huge extent", sized("1099511627776", "1"), "limit"},                      // 2^40
      {"huge product", sized("1048576", "1048576"), "limit"},                     // 2^20 * 2^20
      {"overflowing size", sized("18446744073709551615", "1"), "limit"},          // 2^64-1
      {"overflow past int64", sized("65536", "65536"), "limit"},
      // q, k and v are small, but every implementation would form 2^28 logits.
      {"huge logits", replaced(sized("1", "16384"), "\"kv_len\": 1", "\"kv_len\": 16384"), "logits"},
      {"q too short", replaced(v, "\"q\": [\n      \"nan\", ", "\"q\": [\n      "), "problem.q holds"},
      {"bad hex float", replaced(v, "\"-0x1.8p+0\"", "\"-0x1.8p+0z\""), "not a number"},
      {"element not a string", replaced(v, "\"-0x1.8p+0\"", "{}"), "hex-float"},
      {"not representable", replaced(v, "\"-0x1.8p+0\"", "\"0x1.0001p+0\""), "not representable in f16"},
      {"mask wrong length", replaced(v, "\"mask\": \"", "\"mask\": \"1"), "problem.mask holds"},
      {"mask bad character", replaced(v, "\"mask\": \"0", "\"mask\": \"2"), "problem.mask[0]"},
      {"mask wrong type", replaced(v, "\"mask\": \"", "\"mask\": 5, \"x\": \""), "problem.mask"},
      {"bad scale", replaced(v, "\"scale\": 0.375", "\"scale\": \"big\""), "problem.scale"},
      {"unknown found_by", replaced(v, "\"rapidcheck\"", "\"intuition\""), "found_by"},
      {"negative seed", replaced(v, "18446744073709551615", "-1"), "history.seed"},
      {"expect unknown", replaced(v, "\"law\": \"matches_oracle\",", "\"law\": \"matches_oracle\", \"expect\": \"maybe\","),
       "expect"},
      {"expect not a string", replaced(v, "\"law\": \"matches_oracle\",", "\"law\": \"matches_oracle\", \"expect\": 0,"),
       "expect"},
      {"history not an object", replaced(v, "\"history\": {", "\"history\": 3, \"h\": {"), "history"},
  };
}

TEST(DamagedFile, EachClassIsRefusedNamingTheFileAndTheProblem) {
  TempDir dir;
  for (const Damage& d : damages()) {
    const std::string path = dir.path + "/" + std::string(d.label) + ".json";
    write_file(path, d.text);
    try {
      load_case(path);
      ADD_FAILURE() << d.label << ": was accepted";
    } catch (const CaseFileError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << d.label << ": " << what;
      EXPECT_NE(what.find(d.expected), std::string::npos) << d.label << ": " << what;
    } catch (const std::exception& e) {
      ADD_FAILURE() << d.label << ": threw something else: " << e.what();
    }
  }
}

TEST(DamagedFile, AbsurdSizesAreRefusedWithoutAllocatingThem) {
  for (const Damage& d : damages()) {
    const std::string label = d.label;
    if (label.find("huge") == std::string::npos && label.find("overflow") == std::string::npos) continue;
    g_largest = 0;
    g_watch = true;
    EXPECT_THROW(case_from_json(d.text, "absurd.json"), CaseFileError) << label;
    g_watch = false;
    EXPECT_LT(g_largest.load(), std::size_t{1} << 16) << label;
  }
  // A consistent-looking header whose arrays are short: refused on length, not by allocating the shape.
  const std::string text = R"({"schema_version": 1, "law": "l", "problem": {"dtype": "f64", "batch": 4096,
      "heads": 4096, "q_len": 2, "kv_len": 1, "head_dim": 1, "value_dim": 1, "causal": "none", "scale": 1,
      "q": [], "k": [], "v": [], "mask": null}})";
  g_largest = 0;
  g_watch = true;
  EXPECT_THROW(case_from_json(text, "short.json"), CaseFileError);
  g_watch = false;
  EXPECT_LT(g_largest.load(), std::size_t{1} << 16);
}

TEST(DamagedFile, MissingFolderAndOversizedFilesAreRefused) {
  TempDir dir;
  EXPECT_THROW(load_case(dir.path + "/absent.json"), CaseFileError);
  EXPECT_THROW(load_case(dir.path), CaseFileError);  // a folder
  // A sparse file past the limit: refused from its size, never read.
  const std::string big = dir.path + "/big.json";
  const int fd = ::open(big.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, kMaxCaseFileBytes + 1), 0);
  ::close(fd);
  g_largest = 0;
  g_watch = true;
  try {
    load_case(big);
    ADD_FAILURE() << "accepted";
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
  }
  g_watch = false;
  EXPECT_LT(g_largest.load(), std::size_t{1} << 16);
}

// --- Saving -----------------------------------------------------------------

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SaveCase, NamesTheFileByLawAndContentHash) {
  TempDir dir;
  const CaseRecord rec = record_of(awkward_problem(DType::f32));
  const std::string path = save_case(rec, dir.path);
  EXPECT_EQ(fs::path(path).filename().string(), case_file_name(rec));
  EXPECT_EQ(case_file_name(rec).size(), std::string("matches_oracle-").size() + 16 + 5);
  CaseRecord evil = rec;
  evil.law = "../../evil law";
  EXPECT_EQ(case_file_name(evil).rfind("______evil_law-", 0), 0u) << case_file_name(evil);
}

TEST(SaveCase, IsIdempotentAndKeepsTheFirstHistory) {
  TempDir dir;
  const CaseRecord first = record_of(awkward_problem(DType::bf16));
  CaseRecord again = first;
  again.message = "found again, later";
  again.date = "2030-01-01T00:00:00Z";
  again.found_by = "libfuzzer";
  const std::string a = save_case(first, dir.path);
  const std::string b = save_case(again, dir.path);
  EXPECT_EQ(a, b);
  EXPECT_EQ(listing(dir.path).size(), 1u);
  EXPECT_EQ(load_case(a).message, first.message);

  CaseRecord other_law = first;
  other_law.law = "weights_sum_to_one";
  EXPECT_NE(save_case(other_law, dir.path), a);  // the law is part of the identity
  EXPECT_EQ(listing(dir.path).size(), 2u);
}

TEST(SaveCase, StampsAnEmptyDate) {
  TempDir dir;
  CaseRecord rec = record_of(awkward_problem(DType::f64));
  rec.date.clear();
  const std::string date = load_case(save_case(rec, dir.path)).date;
  ASSERT_EQ(date.size(), 20u) << date;  // 2025-01-31T12:00:00Z
  EXPECT_EQ(date[10], 'T');
  EXPECT_EQ(date.back(), 'Z');
}

TEST(SaveCase, NeverOverwritesADifferentFileUnderItsName) {
  TempDir dir;
  const CaseRecord rec = record_of(awkward_problem(DType::f32));
  const std::string name = case_file_name(rec);
  const std::string stem = name.substr(0, name.size() - 5);
  // A different valid case under this name (a hash collision), and a damaged one under the next.
  CaseRecord other = record_of(awkward_problem(DType::f64));
  const std::string other_text = case_to_json(other);
  write_file(dir.path + "/" + name, other_text);
  write_file(dir.path + "/" + stem + "-2.json", "{ damaged");

  const std::string path = save_case(rec, dir.path);
  EXPECT_EQ(fs::path(path).filename().string(), stem + "-3.json");
  expect_same_record(rec, load_case(path));
  std::ifstream in(dir.path + "/" + name);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), other_text);
  EXPECT_EQ(save_case(rec, dir.path), path);  // found again under its suffixed name
  EXPECT_EQ(listing(dir.path).size(), 3u);
}

TEST(SaveCase, RefusesWhatCouldNotBeLoadedAndLeavesNoTemporaries) {
  TempDir dir;
  CaseRecord rec = record_of(awkward_problem(DType::f32));
  rec.problem.q.pop_back();
  EXPECT_THROW(save_case(rec, dir.path), CaseFileError);
  rec = record_of(awkward_problem(DType::f16));
  rec.problem.k[3] = 0.1;  // not an f16 value
  EXPECT_THROW(save_case(rec, dir.path), CaseFileError);
  rec = record_of(awkward_problem(DType::f16));
  save_case(rec, dir.path);
  save_case(rec, dir.path);
  for (const std::string& n : listing(dir.path)) EXPECT_NE(n[0], '.') << n;
}

TEST(SaveCase, FailsCleanlyWhenTheFolderCannotBeMade) {
  TempDir dir;
  write_file(dir.path + "/file", "x");
  EXPECT_THROW(save_case(record_of(awkward_problem(DType::f32)), dir.path + "/file/sub"), CaseFileError);
}

// Several processes save into one folder at once, each a mix of cases shared
// with the others (found by all, histories differing) and cases of its own:
// every distinct case ends up there exactly once, and every file parses.
TEST(SaveCase, ConcurrentProcessesLoseNothing) {
  TempDir dir;
  const std::string target = dir.path + "/cases";
  constexpr int kProcesses = 8, kCasesEach = 24;
  auto case_for = [](int process, int i) {
    const bool shared = i % 2 == 0;
    Problem p = make_problem(DType::f32, Shape{1, 2, 3, 3, 2, 2});
    p.q[0] = shared ? i : 1000 * (process + 1) + i;
    CaseRecord r = record_of(p, i % 3 ? "matches_oracle" : "weights_sum_to_one");
    r.message = "process " + std::to_string(process);
    r.seed = static_cast<uint64_t>(process);
    return r;
  };
  std::vector<pid_t> children;
  for (int proc = 0; proc < kProcesses; ++proc) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        for (int i = 0; i < kCasesEach; ++i) save_case(case_for(proc, i), target);
      } catch (...) {
        status = 1;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a saving process failed";
  }

  std::set<std::string> expected;
  for (int proc = 0; proc < kProcesses; ++proc)
    for (int i = 0; i < kCasesEach; ++i) expected.insert(case_file_name(case_for(proc, i)));
  std::map<uint64_t, int> seen;
  const auto names = listing(target);
  for (const std::string& n : names) {
    EXPECT_NE(n[0], '.') << "temporary left behind: " << n;
    const CaseRecord r = load_case(target + "/" + n);  // throws (fails the test) if damaged
    ++seen[case_content_hash(r)];
    EXPECT_TRUE(expected.count(n)) << n;
  }
  EXPECT_EQ(names.size(), expected.size());
  EXPECT_EQ(seen.size(), expected.size());
  for (const auto& [hash, count] : seen) EXPECT_EQ(count, 1) << std::hex << hash;
}

}  // namespace
}  // namespace attncheck
