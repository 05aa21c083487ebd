// An implementation whose ABI forward function lives in this process
// (the built-ins). The call goes through the same encoded layout, poison and
// guard checks as a plugin's, so built-ins are judged exactly like plugins.
#pragma once

#include <memory>
#include <string>

#include "impls/builtins.h"
#include "impls/implementation.h"

namespace attncheck {

class InProcessImplementation final : public Implementation {
 public:
  InProcessImplementation(std::string name, ForwardFn forward) : name_(std::move(name)), forward_(forward) {}
  // A v2 built-in: called through ABI v2 for every problem within `features`.
  // With `backward` it also takes backward problems (kBackwardFeature).
  InProcessImplementation(std::string name, ForwardV2Fn forward, FeatureBits features,
                          BackwardV2Fn backward = nullptr)
      : name_(std::move(name)), forward_v2_(forward), backward_v2_(backward), features_(features) {}
  std::string name() const override { return name_; }
  std::string source() const override { return "builtin:" + name_; }
  Outcome run(const Problem& problem) override;
  FeatureBits features() const override { return features_ | (backward_v2_ ? kBackwardFeature : 0); }

 private:
  std::string name_;
  ForwardFn forward_ = nullptr;
  ForwardV2Fn forward_v2_ = nullptr;
  BackwardV2Fn backward_v2_ = nullptr;
  FeatureBits features_ = kV1Features;
};

// The built-in of that name (see impls/builtins.h), or nullptr. A new instance
// starts as the program did: a built-in's state between calls is reset
// (BuiltinInfo::reset), so call it once per law for reports that do not
// depend on which laws ran before on the same instance. One instance at a
// time for a built-in with state (its state is the function's, not the object's).
std::unique_ptr<Implementation> make_builtin(std::string_view name);

}  // namespace attncheck
