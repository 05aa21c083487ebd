#include "cli/default_run.h"

#include "impls/builtins.h"

namespace attncheck {

std::vector<DefaultTarget> default_targets() {
  std::vector<DefaultTarget> targets;
  for (const BuiltinInfo& b : builtins())
    targets.push_back(
        {std::string(b.name), b.kind == BuiltinKind::reference ? Expectation::must_pass : Expectation::must_be_caught});
  return targets;
}

}  // namespace attncheck
