// Issue #30, "reports that do not lie after an interrupt": a report is written
// whole (temporary file + rename), an earlier run's report is cleared at the
// start, and two report flags never name one file.
#include "report/report_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "report/run_report.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

class ReportFiles : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  std::string at(const std::string& name) const { return dir + "/" + name; }
  static std::string read(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  const std::string dir = (fs::temp_directory_path() / ("attncheck_reports_" + std::to_string(::getpid()))).string();
};

TEST_F(ReportFiles, WrittenWholeWithNoTemporaryLeft) {
  write_text_file(at("r.json"), "first");
  write_text_file(at("r.json"), "second");
  EXPECT_EQ(read(at("r.json")), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST_F(ReportFiles, ReplacedByRenameNotRewrittenInPlace) {
  // A reader holding the old file keeps reading the old text whole: the new
  // one is a different inode, renamed into place.
  write_text_file(at("r.json"), "old report");
  std::ifstream reader(at("r.json"));
  struct stat before {};
  ASSERT_EQ(::stat(at("r.json").c_str(), &before), 0);
  write_text_file(at("r.json"), "new");
  struct stat after {};
  ASSERT_EQ(::stat(at("r.json").c_str(), &after), 0);
  EXPECT_NE(before.st_ino, after.st_ino);
  std::string old;
  std::getline(reader, old);
  EXPECT_EQ(old, "old report");
}

TEST_F(ReportFiles, WrittenThroughASymlinkAndToADevice) {
  fs::create_symlink("real.json", at("link.json"));  // dangling until written
  write_text_file(at("link.json"), "through");
  EXPECT_TRUE(fs::is_symlink(at("link.json")));
  EXPECT_EQ(read(at("real.json")), "through");
  EXPECT_NO_THROW(write_text_file("/dev/null", "discarded"));
  EXPECT_THROW(write_text_file(dir, "a folder"), std::runtime_error);
}

TEST_F(ReportFiles, StaleReportsAreRemovedAtTheStart) {
  write_text_file(at("r.json"), "{\"verdict\": \"pass\"}");
  fs::create_symlink("target.xml", at("r.xml"));
  write_text_file(at("target.xml"), "<testsuites/>");
  const ReportPaths paths{{"json", at("r.json")}, {"junit", at("r.xml")}, {"markdown", at("none.md")}};
  EXPECT_EQ(remove_stale_reports(paths), "");
  EXPECT_FALSE(fs::exists(at("r.json")));
  EXPECT_FALSE(fs::exists(at("target.xml")));  // the file the link names
  EXPECT_TRUE(fs::is_symlink(at("r.xml")));
  EXPECT_EQ(remove_stale_reports(ReportPaths{{"json", "/dev/null"}}), "");  // a device is never removed
  EXPECT_TRUE(fs::exists("/dev/null"));
}

TEST_F(ReportFiles, TwoFlagsNamingOneFileAreRefused) {
  EXPECT_EQ(report_paths_clash({{"json", at("a.json")}, {"junit", at("b.xml")}}), "");
  EXPECT_NE(report_paths_clash({{"json", at("a.json")}, {"junit", at("a.json")}}), "");
  EXPECT_NE(report_paths_clash({{"json", "-"}}), "");
  // A dangling symlink: writing b.xml would create a.json.
  fs::create_symlink("a.json", at("b.xml"));
  const std::string dangling = report_paths_clash({{"json", at("a.json")}, {"junit", at("b.xml")}});
  EXPECT_NE(dangling.find("--json and --junit name the same file"), std::string::npos) << dangling;
  // A hard link.
  write_text_file(at("a.json"), "{}");
  fs::create_hard_link(at("a.json"), at("c.md"));
  const std::string hard = report_paths_clash({{"json", at("a.json")}, {"markdown", at("c.md")}});
  EXPECT_NE(hard.find("--json and --markdown name the same file"), std::string::npos) << hard;
  // A folder reached through a symlink, and a relative path.
  fs::create_directory_symlink(dir, at("again"));
  EXPECT_NE(report_paths_clash({{"json", at("a.json")}, {"junit", at("again/a.json")}}), "");
  const fs::path cwd = fs::current_path();
  fs::current_path(at("again"));
  EXPECT_NE(report_paths_clash({{"json", at("a.json")}, {"junit", "./x/../a.json"}}), "");
  fs::current_path(cwd);
}

}  // namespace
}  // namespace attncheck
