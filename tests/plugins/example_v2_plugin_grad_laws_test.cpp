// The v2 example plugin under every gradient law, as `attncheck check --plugin
// libexample_attention_v2.so --law grad_...` runs them (run_law through the plugin
// host, the generators' backward problems with every feature the example declares):
// each passes, on at least 20 judged cases. The example is the backward to copy; a law
// it fails is a bug in one of the two. Seeded from ATTNCHECK_SEED, default 20261130.
// The gradient laws are the catalogue's laws that need a backward; the test fails,
// never passes empty, if there are none or if one of the named ones went missing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "driver/law_run.h"
#include "driver/seed_env.h"
#include "law_framework/law.h"
#include "host/plugin_host.h"

#ifndef ATTNCHECK_EXAMPLE_V2_PLUGIN
#error "ATTNCHECK_EXAMPLE_V2_PLUGIN must name the example v2 plugin"
#endif

namespace attncheck {
namespace {

TEST(ExampleV2GradLaws, EveryGradientLawPasses) {
  std::string error;
  const char* path = std::getenv("ATTNCHECK_EXAMPLE_V2_PLUGIN");  // another build of it, to see this fail
  auto example = load_plugin(path ? path : ATTNCHECK_EXAMPLE_V2_PLUGIN, {}, error);
  ASSERT_TRUE(example) << error;
  const uint64_t seed = seed_from_env_or(20261130u);
  std::printf("ATTNCHECK_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::vector<const Law*> gradient_laws;
  std::vector<const Law*> promised_laws;  // judge an ABI v3 promise, which a v2 plugin cannot make
  for (const Law& law : all_laws())
    if (law.required & kBackwardFeature) (law.required_promises ? promised_laws : gradient_laws).push_back(&law);
  // The gradient laws of issue #15 at least: a law that stopped needing a
  // backward (and so left this test) is a change to look at, not a silent pass.
  for (const char* name : {"grad_matches_oracle", "grad_key_shift_zero", "grad_values_sum", "grad_linear_in_dout",
                           "grad_consistent_with_forward", "grad_empty_rows_zero", "grad_deterministic"}) {
    const Law* law = find_law(name);
    ASSERT_NE(law, nullptr) << name << " is not registered";
    EXPECT_TRUE(law->required & kBackwardFeature) << name << " no longer needs a backward";
  }
  ASSERT_GE(gradient_laws.size(), 7u);
  // A promised law is never passed for a plugin that made no promise: skipped, and says why.
  for (const Law* law : promised_laws) {
    RunOptions options;
    options.seed = seed;
    options.cases = 5;
    const LawReport r = run_law(*law, *example, options);
    EXPECT_EQ(r.status, LawStatus::skipped) << law->name << ": " << r.message;
    EXPECT_NE(r.message.find("does not declare"), std::string::npos) << law->name << ": " << r.message;
  }
  for (const Law* law_ptr : gradient_laws) {
    const Law& law = *law_ptr;
    RunOptions options;
    options.seed = seed;
    options.cases = 100;
    // Shorter rows than the default profile's: the example computes in double, one
    // element at a time, and this runs in CTest next to the other tests.
    options.gen.max_q_len = options.gen.max_kv_len = 24;
    options.gen.max_head_dim = options.gen.max_value_dim = 24;
    options.gen.dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
    const LawReport r = run_law(law, *example, options);
    EXPECT_EQ(r.status, LawStatus::pass) << law.name << ": " << r.message << "\n"
                                         << (r.counterexample ? r.counterexample->describe() : std::string());
    EXPECT_GE(r.judged, 20) << law.name;
    std::printf("%-36s %s, %d judged, largest q_len %lld kv_len %lld head_dim %lld\n", law.name.c_str(),
                std::string(law_status_name(r.status)).c_str(), r.judged, static_cast<long long>(r.largest.q_len),
                static_cast<long long>(r.largest.kv_len), static_cast<long long>(r.largest.head_dim));
  }
}

}  // namespace
}  // namespace attncheck
