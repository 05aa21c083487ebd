// accuracy_within_typical: over many cases where the typical-error model holds
// (Gaussian draws, f32, f16, bf16; oracle/typical_error.h), an
// implementation's errors are not systematically beyond what a careful kernel
// of the dtype makes. Each case is graded (the root-mean-square of
// |error| / typical error over its elements); the law fails a dtype only
// when at least half of at least kAccuracyMinCases graded cases are beyond
// kAccuracyFactor times the model (accuracy_verdict, oracle/accuracy_grade.h):
// a decision over many cases with a stated false-alarm probability
// (docs/tolerance.md, "The accuracy law"), never one unlucky case, so it
// names no counterexample and nothing is shrunk.
//
// Catches: kernels correct in their semantics but far less accurate than a
// careful one (an exp of relative error 4e-5; f16 q.k summed in f16), which
// the worst-case bound lets pass. Cannot catch: inaccuracy only outside the
// model's domain (masks leaving one key, soft-caps, biases, small integers),
// or below kAccuracyFactor times the model.
#include <algorithm>

#include "law_framework/law_support.h"
#include "oracle/typical_error.h"

namespace attncheck {

Law law_accuracy_within_typical() {
  Law law;
  law.name = "accuracy_within_typical";
  law.statement = "over many Gaussian cases, errors are not systematically beyond a careful kernel's of the dtype";
  // Masks, causal rules, windows, lengths, GQA and strides only choose keys: modelled.
  law.features = kAllFeatures & ~(ATTNCHECK_FEATURE_SOFTCAP | ATTNCHECK_FEATURE_BIAS | ATTNCHECK_FEATURE_ALIBI |
                                  ATTNCHECK_FEATURE_SINKS);
  law.tailor = [](GenOptions& g) {
    g.families = kGaussian;
    // f64 is not graded (typical_error.h): drawn only when nothing else is.
    std::vector<DType> graded;
    for (DType t : g.dtypes)
      if (t != DType::f64) graded.push_back(t);
    if (!graded.empty()) g.dtypes = graded;
    // At least 16 elements in each of q, k, v where the limits allow, and the
    // head dims of real kernels (64 and up): a logit's rounding errors grow
    // with head_dim, and below 64 a 16-bit sum over d hides under the 16-bit
    // logits a careful kernel may store.
    if (g.max_kv_len >= 16) g.min_kv_len = std::max<int64_t>(g.min_kv_len, 16);
    g.min_head_dim = std::max<int64_t>(g.min_head_dim, std::min<int64_t>(g.max_head_dim, 64));
  };
  law.cheap = false;
  law.decides_on_accuracy = true;
  law.in_default_catalogue = false;
  law.check = [](Implementation& impl, const Problem& p) {
    if (std::string why = typical_error_model_excludes(p); !why.empty())
      return Verdict::not_applicable("the typical-error model does not hold: " + why);
    CheckedRun run;
    if (auto bad = run_with_oracle(impl, p, run)) return *bad;
    Verdict v = Verdict::pass();
    v.accuracy = grade_case(p, run.oracle, run.out);
    if (!v.accuracy) return Verdict::not_applicable("no row the model grades (each sees one key, or one key dominates)");
    return v;
  };
  return law;
}

}  // namespace attncheck
