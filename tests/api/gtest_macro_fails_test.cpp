// A deliberately wrong attention (the founding case: logits never scaled by
// 1/sqrt(d)) under ATTNCHECK_TEST: its query_sensitivity test must fail, with
// the diagnosis, the shrunk case and a case file in $ATTNCHECK_REGRESSION_DIR.
// CTest runs it through expect_failure.cmake, which asserts exactly that.
#include <gtest/gtest.h>

#include "attncheck/gtest.hpp"
#include "impls/builtins.h"

namespace {

attncheck::Options sensitivity_only() {
  attncheck::Options o;
  o.laws = {"query_sensitivity"};
  o.cases = 30;
  return o;
}

ATTNCHECK_TEST_WITH(ApiMacroFails, Unscaled, sensitivity_only(), attncheck::find_builtin("seed_unscaled")->forward);

}  // namespace
