// ATTNCHECK_SEED has one reader (driver/seed_env.h), and it takes a whole
// number or nothing: "abc" was seed 0 to some tests and "-1" was 2^64 - 1, so a
// typo ran a seed other than the one asked for, and the run said nothing.
#include "driver/seed_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace attncheck {
namespace {

// Sets ATTNCHECK_SEED for one test and puts back what was there.
class SeedEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* s = std::getenv("ATTNCHECK_SEED")) saved_ = s;
  }
  void TearDown() override {
    if (saved_)
      ::setenv("ATTNCHECK_SEED", saved_->c_str(), 1);
    else
      ::unsetenv("ATTNCHECK_SEED");
  }
  std::optional<std::string> saved_;
};

TEST_F(SeedEnv, UnsetOrEmptyGivesTheFallback) {
  ::unsetenv("ATTNCHECK_SEED");
  EXPECT_EQ(seed_from_env(), std::nullopt);
  EXPECT_EQ(seed_from_env_or(20261130), 20261130u);
  ::setenv("ATTNCHECK_SEED", "", 1);
  EXPECT_EQ(seed_from_env_or(7), 7u);
}

TEST_F(SeedEnv, AWholeNumberIsTheSeed) {
  ::setenv("ATTNCHECK_SEED", "42", 1);
  EXPECT_EQ(seed_from_env_or(1), 42u);
  ::setenv("ATTNCHECK_SEED", "0", 1);
  EXPECT_EQ(seed_from_env_or(1), 0u);
  ::setenv("ATTNCHECK_SEED", "18446744073709551615", 1);
  EXPECT_EQ(seed_from_env_or(1), 18446744073709551615u);
}

TEST_F(SeedEnv, AnythingElseIsRefusedWithTheReason) {
  for (const char* bad : {"abc", "12x", "-1", "+5", " 7", "7 ", "0x10", "1e3", "18446744073709551616"}) {
    ::setenv("ATTNCHECK_SEED", bad, 1);
    try {
      const uint64_t seed = seed_from_env_or(1);
      ADD_FAILURE() << "ATTNCHECK_SEED='" << bad << "' was read as seed " << seed;
    } catch (const SeedEnvError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("ATTNCHECK_SEED='") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("whole number"), std::string::npos) << what;
    }
  }
}

TEST(ParseSeedText, DigitsOnly) {
  EXPECT_EQ(parse_seed_text("20261130"), 20261130u);
  EXPECT_EQ(parse_seed_text(""), std::nullopt);
  EXPECT_EQ(parse_seed_text("abc"), std::nullopt);
  EXPECT_EQ(parse_seed_text("-0"), std::nullopt);
}

}  // namespace
}  // namespace attncheck
