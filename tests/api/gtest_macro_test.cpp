// ATTNCHECK_TEST (include/attncheck/gtest.hpp) in a test binary of its own:
// a functor with state and a v2 lambda, each registered as one test per law.
// The failing counterpart, which must fail, is gtest_macro_fails_test.cpp.
#include <gtest/gtest.h>

#include "attncheck/gtest.hpp"
#include "impls/builtins.h"

namespace {

struct Reference {
  int calls = 0;  // state: the functor is copied once into the registration, then called there
  int operator()(const attncheck_call* c, char* err, size_t n) {
    ++calls;
    return attncheck::find_builtin("reference")->forward(c, err, n);
  }
};

attncheck::Options quick(std::vector<std::string> laws, uint32_t features = 0) {
  attncheck::Options o;
  o.laws = std::move(laws);
  o.cases = 30;
  o.features = features;
  return o;
}

ATTNCHECK_TEST_WITH(ApiMacro, Reference, quick({"weights_sum_to_one", "matches_oracle", "query_sensitivity"}),
                    Reference{});

// online's v2 bits: its PACKED and PAGED are version 3's, for a v3 callable.
ATTNCHECK_TEST_WITH(ApiMacro, OnlineV2, quick({"gqa_equals_repeated_kv", "window_equals_mask"},
                                              attncheck::find_builtin("online")->features & ((1u << 11) - 1)),
                    [](const attncheck_call_v2* c, char* err, size_t n) {
                      return attncheck::find_builtin("online")->forward_v2(c, err, n);
                    });

// Every law registered is a test of its own, named Suite.Name/<law>.
TEST(ApiMacroRegistration, OneTestPerLaw) {
  const ::testing::UnitTest* u = ::testing::UnitTest::GetInstance();
  std::vector<std::string> names;
  for (int i = 0; i < u->total_test_suite_count(); ++i) {
    const ::testing::TestSuite* s = u->GetTestSuite(i);
    if (std::string(s->name()) != "ApiMacro") continue;
    for (int j = 0; j < s->total_test_count(); ++j) names.push_back(s->GetTestInfo(j)->name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Reference/weights_sum_to_one", "Reference/matches_oracle",
                                             "Reference/query_sensitivity", "OnlineV2/gqa_equals_repeated_kv",
                                             "OnlineV2/window_equals_mask"}));
}

}  // namespace
