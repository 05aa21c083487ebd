// The gradient laws on a plugin with the features that make rows see no key turned
// off: no mask, no causal rule, no bias (its -inf entries hide keys), so STRIDES and
// backward only. libtorch 1.13 gives NaN gradients for such rows (docs/torch-findings.md,
// finding 3), and a law stops at its first failure: with those features on, every
// gradient law fails on that one NaN within a few cases and shows nothing else. This
// runs them where the NaN cannot arise, to see what else libtorch's gradients do.
// `attncheck check` has no flag that narrows the features, hence this program
// (run_law with RunOptions::features).
//
//   build/plugins/torch/grad_laws_without_empty_rows PLUGIN [SEED [CASES]]
//   e.g. build/plugins/torch/grad_laws_without_empty_rows build/plugins/libtorch_attention.so 20261130
//
// Prints one line per gradient law (status, cases judged, message, diagnosis) and each
// failure's shrunk case; dtypes f32, f64 and bf16 (the adapter's). Exit 0 when it ran.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "driver/law_run.h"
#include "law_framework/law.h"
#include "host/plugin_host.h"

using namespace attncheck;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PLUGIN [SEED [CASES]]\n", argv[0]);
    return 2;
  }
  std::string error;
  auto impl = load_plugin(argv[1], {}, error);
  if (!impl) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20261130;
  const int cases = argc > 3 ? std::atoi(argv[3]) : 100;
  std::printf("%s, seed %llu, %d cases per law, features strides,backward (no mask, causal rule or bias)\n",
              impl->name().c_str(), static_cast<unsigned long long>(seed), cases);
  for (const Law& law : all_laws()) {
    if (!(law.required & kBackwardFeature)) continue;
    RunOptions options;
    options.seed = seed;
    options.cases = cases;
    options.gen.mask = false;
    options.gen.causal = false;
    options.gen.dtypes = {DType::f32, DType::f64, DType::bf16};
    options.features = ATTNCHECK_FEATURE_STRIDES | kBackwardFeature;
    const LawReport r = run_law(law, *impl, options);
    std::printf("%-36s %-12s judged %3d  %s%s%s\n", r.law.c_str(), std::string(law_status_name(r.status)).c_str(),
                r.judged, r.message.c_str(), r.diagnosis.empty() ? "" : " | ", r.diagnosis.c_str());
    if (r.status == LawStatus::fail && r.counterexample)
      std::printf("  shrunk case:\n%s\n", r.counterexample->describe(std::getenv("ATTNCHECK_FULL_CASES") ? 1000000 : 64).c_str());
  }
  return 0;
}
