// Issue #30, "untrusted text stays text": the escaping every report format and
// the console apply to what plugins, Python tracebacks, case files and config
// files hold, and the limits every JSON input shares.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "casefile/case_file.h"
#include "run/expectations.h"
#include "text/printable_text.h"
#include "report/console_report.h"
#include "report/junit_report.h"
#include "report/markdown_report.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

// Every byte sequence issue #30 names, and then some.
const std::string kHostile =
    "fffe \xef\xbf\xbe ffff \xef\xbf\xbf c0 \x01\x02\x0b\x0c\x1f\x7f surrogate \xed\xa0\x80 \xed\xbf\xbf overlong "
    "\xc0\xaf \xe0\x80\xaf f5-ff \xf5\xf6\xf7\xf8\xff big \xf4\x90\x80\x80 cut \xe2\x82 stray \x80 c1 \xc2\x9b "
    "bidi \xe2\x80\xae \xe2\x81\xa6 esc \x1b[2J nul-free end";

// Whether `s` is well-formed UTF-8 of XML 1.0 characters only.
bool xml_text(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const std::size_t n = utf8_sequence(s, i, cp);
    if (n == 0 || cp == 0xFFFE || cp == 0xFFFF) return false;
    i += n;
  }
  return true;
}

// Whether a terminal would obey something in `s` (newlines allowed).
bool terminal_safe(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n') || c == 0x7F) return false;
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const std::size_t n = utf8_sequence(s, i, cp);
    if (n == 0 || (cp >= 0x80 && cp <= 0x9F) || is_format_control(cp)) return false;
    i += n;
  }
  return true;
}

TEST(Utf8Sequence, RefusesEveryIllFormedSequence) {
  uint32_t cp = 0;
  for (const char* bad : {"\xed\xa0\x80", "\xc0\xaf", "\xe0\x80\xaf", "\xf5\x80\x80\x80", "\xf4\x90\x80\x80",
                          "\xe2\x82", "\x80", "\xff"})
    EXPECT_EQ(utf8_sequence(bad, 0, cp), 0u) << bad;
  EXPECT_EQ(utf8_sequence("\xef\xbf\xbe", 0, cp), 3u);  // U+FFFE is UTF-8; XML refuses it elsewhere
  EXPECT_EQ(cp, 0xFFFEu);
  EXPECT_EQ(utf8_sequence("\xf0\x9f\x98\x80", 0, cp), 4u);
}

TEST(Printable, EscapesBidiOverridesAndIsIdempotent) {
  EXPECT_EQ(printable("a\xe2\x80\xae" "b"), "a\\u202eb");
  EXPECT_EQ(printable("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x9c\x85"), "caf\xc3\xa9 \xe2\x9c\x85");  // printable UTF-8 kept
  EXPECT_EQ(printable("a\nb"), "a\\nb");
  EXPECT_EQ(printable("a\nb\x1b", Newlines::keep), "a\nb\\x1b");
  const std::string once = printable(kHostile);
  EXPECT_TRUE(terminal_safe(once)) << once;
  EXPECT_EQ(printable(once), once);
  EXPECT_NE(once.find("nul-free end"), std::string::npos);
}

TEST(XmlEscape, AnyBytesGiveXmlCharactersOnly) {
  for (bool attribute : {true, false}) {
    const std::string x = xml_escape(kHostile, attribute);
    EXPECT_TRUE(xml_text(x)) << x;
    EXPECT_NE(x.find("nul-free end"), std::string::npos);
  }
  EXPECT_EQ(xml_escape("\xef\xbf\xbe\xef\xbf\xbf"), "??");
  EXPECT_EQ(xml_escape("\xed\xa0\x80"), "???");  // a surrogate: three bytes that are no character
  EXPECT_EQ(xml_escape("\xf5\xf6\xf7"), "???");
  EXPECT_EQ(xml_escape("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");
}

RunReport hostile_report() {
  RunReport r;
  r.replay = true;
  ImplementationResult i;
  i.name = "evil|<img src=x onerror=alert(1)>*_`" + kHostile;
  i.source = "plugin:/tmp/" + kHostile + ".so";
  LawResult l;
  l.run.law = "matches_oracle";
  l.run.status = LawStatus::fail;
  l.run.message = "| broken | row |\n<script>alert(1)</script> " + kHostile;
  l.run.diagnosis = "**bold** [link](http://x) " + kHostile;
  l.replayed_file = "cases/" + kHostile + ".json";
  l.case_file = "cases/" + kHostile + "`.json";
  l.reproduce = "attncheck replay '" + kHostile + "'";
  l.expected_failure = std::nullopt;
  i.laws.push_back(l);
  r.implementations.push_back(i);
  return r;
}

TEST(JunitReport, WellFormedWhateverTheTextsHold) {
  const std::string x = report_to_junit(hostile_report());
  EXPECT_TRUE(xml_text(x));
  EXPECT_EQ(x.find("<script>"), std::string::npos);
  EXPECT_EQ(x.find("<img"), std::string::npos);
}

TEST(MarkdownReport, TextCannotBreakTheTableOrInjectMarkup) {
  EXPECT_EQ(markdown_cell("a|b\nc_d <x>"), "a\\|b c\\_d \\<x\\>");
  EXPECT_EQ(markdown_cell("![i](u) &lt; ~~s~~ $x$"), "\\!\\[i\\](u) \\&lt; \\~\\~s\\~\\~ \\$x\\$");
  const std::string md = report_to_markdown(hostile_report());
  EXPECT_TRUE(terminal_safe(md)) << md;
  std::istringstream lines(md);
  int header_pipes = -1;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '|') continue;
    int pipes = 0;
    for (std::size_t k = 0; k < line.size(); ++k) pipes += line[k] == '|' && (k == 0 || line[k - 1] != '\\');
    if (header_pipes < 0) header_pipes = pipes;
    EXPECT_EQ(pipes, header_pipes) << line;
  }
  EXPECT_EQ(header_pipes, 3);
  for (std::size_t at = md.find('<'); at != std::string::npos; at = md.find('<', at + 1))
    EXPECT_EQ(md[at - 1], '\\') << "raw HTML at " << at << ": " << md.substr(at, 20);
  EXPECT_NE(md.find("\\<img src=x onerror=alert(1)\\>"), std::string::npos);
  EXPECT_EQ(md.find("**bold**"), std::string::npos);
}

TEST(ConsoleReport, NoControlOrBidiCharacterReachesTheTerminal) {
  RunReport r = hostile_report();
  r.replay = false;
  r.implementations[0].laws[0].expected_failure = kHostile;  // an XFAIL line with its reason
  LawResult failing = hostile_report().implementations[0].laws[0];
  failing.run.law = "weights_sum_to_one";
  r.implementations[0].laws.push_back(failing);
  std::ostringstream out;
  print_law_table(r, out);
  print_failures(r, out);
  print_verdict(r, out);
  EXPECT_TRUE(terminal_safe(out.str())) << out.str();
  EXPECT_NE(out.str().find("\\u202e"), std::string::npos);
}

TEST(CaseFileError, ShowsTheFileNameEscaped) {
  const std::string dir = (fs::temp_directory_path() / ("attncheck_text_" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  const std::string path = dir + "/x\x1b[2J\xe2\x80\xae.json";
  std::ofstream(path) << "{";
  try {
    load_case(path);
    ADD_FAILURE() << "a truncated file loaded";
  } catch (const CaseFileError& e) {
    EXPECT_TRUE(terminal_safe(e.what())) << e.what();
    EXPECT_NE(std::string(e.what()).find("x\\x1b[2J\\u202e.json"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(CaseFile, RefusesALawOrSourceHoldingControls) {
  const std::string text = R"({"schema_version": 1, "law": "matches_oracle\u001b[2J", "problem": {}})";
  try {
    case_from_json(text, "x.json");
    ADD_FAILURE() << "loaded";
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find("law \"matches_oracle\\x1b[2J\" holds a control"), std::string::npos)
        << e.what();
  }
}

class ConfigFile : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = dir + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  const std::string dir = (fs::temp_directory_path() / ("attncheck_config_" + std::to_string(::getpid()))).string();
};

TEST_F(ConfigFile, NestingIsBoundedAsInACaseFile) {
  const int depth = 200000;
  const std::string path = write("deep.json", "{\"skip_law\": " + std::string(depth, '[') + std::string(depth, ']') + "}");
  Expectations e;
  std::string error;
  EXPECT_FALSE(load_expectations_config(path, e, error));
  EXPECT_NE(error.find("nest deeper than 64 levels"), std::string::npos) << error.substr(0, 300);
  EXPECT_LT(error.size(), 400u);
  // Deep but within the limit, in a place that must be a string: named, not dumped whole.
  const std::string ok = write("inner.json", "{\"skip_law\": [" + std::string(60, '[') + std::string(60, ']') + "]}");
  EXPECT_FALSE(load_expectations_config(ok, e, error));
  EXPECT_NE(error.find("not a law name"), std::string::npos) << error;
  EXPECT_LT(error.size(), 200u) << error;
}

TEST_F(ConfigFile, AFifoAFolderOrADeviceIsRefusedAtOnce) {
  const std::string fifo = dir + "/fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, words] : {std::pair<std::string, std::string>{fifo, "a FIFO"}, {dir, "a folder"},
                                    {"/dev/zero", "a character device"}}) {
    Expectations e;
    std::string error;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(load_expectations_config(path, e, error));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    EXPECT_NE(error.find("not a regular file but " + words), std::string::npos) << error;
  }
}

TEST_F(ConfigFile, DuplicateKeysAreRefusedAndNamesEscaped) {
  Expectations e;
  std::string error;
  EXPECT_FALSE(load_expectations_config(write("dup.json", R"({"skip_law": [], "skip_law": []})"), e, error));
  EXPECT_NE(error.find("more than once"), std::string::npos) << error;
  Expectations bad;
  ASSERT_TRUE(load_expectations_config(write("esc.json", R"({"skip_law": ["x\u001b[2J\u202e"]})"), bad, error))
      << error;
  const std::string problem = expectations_problem(bad, {});
  EXPECT_TRUE(terminal_safe(problem)) << problem;
  EXPECT_NE(problem.find("x\\x1b[2J\\u202e"), std::string::npos) << problem;
}

}  // namespace
}  // namespace attncheck
