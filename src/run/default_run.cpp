#include "run/default_run.h"

#include "impls/builtins.h"

namespace attncheck {

std::vector<DefaultTarget> default_targets() {
  const BuiltinInfo* reference = find_builtin("reference");
  std::vector<DefaultTarget> targets;
  for (const BuiltinInfo& b : builtins()) {
    DefaultTarget t;
    t.name = std::string(b.name);
    t.expectation = b.kind == BuiltinKind::reference ? Expectation::must_pass : Expectation::must_be_caught;
    if (b.kind == BuiltinKind::zoo && b.backward_v2 && reference && b.forward == reference->forward &&
        b.forward_v2 == reference->forward_v2) {
      t.only_laws_requiring = kBackwardFeature;
      t.only_reason = "not run in the embedded default: " + t.name +
                      "'s forward is reference's, judged in reference's row";
    }
    targets.push_back(std::move(t));
  }
  return targets;
}

}  // namespace attncheck
