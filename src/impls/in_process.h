// An implementation whose ABI forward function lives in this process
// (the built-ins, and the callables of the public C++ API, include/attncheck/
// attncheck.hpp). The call goes through the same encoded layout, poison and
// guard checks as a plugin's, so built-ins are judged exactly like plugins.
// The entries are type-erased (std::function), so a lambda or a functor with
// state is an implementation as well as the built-ins' bare function pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "impls/builtins.h"
#include "impls/implementation.h"

namespace attncheck {

// What the entries may be: a function pointer (ForwardFn, ...) or any callable.
using ForwardCall = std::function<int(const attncheck_call*, char*, size_t)>;
using ForwardV2Call = std::function<int(const attncheck_call_v2*, char*, size_t)>;
using BackwardV2Call = std::function<int(const attncheck_call_v2*, const attncheck_grad*, char*, size_t)>;
using ForwardV3Call = std::function<int(const attncheck_call_v3*, char*, size_t)>;
using BackwardV3Call = std::function<int(const attncheck_call_v3*, const attncheck_grad*, char*, size_t)>;

class InProcessImplementation final : public Implementation {
 public:
  InProcessImplementation(std::string name, ForwardCall forward) : name_(std::move(name)), forward_(std::move(forward)) {}
  // A v2 built-in: called through ABI v2 for every problem within `features`.
  // With `backward` it also takes backward problems (kBackwardFeature).
  InProcessImplementation(std::string name, ForwardV2Call forward, FeatureBits features,
                          BackwardV2Call backward = nullptr)
      : name_(std::move(name)), forward_v2_(std::move(forward)), backward_v2_(std::move(backward)),
        features_(features) {}
  // A v2 built-in that also speaks version 3: every forward call then goes
  // through `forward` with an attncheck_call_v3 (packed problems included;
  // `features` may then hold kPackedFeature). Backward stays version 2's unless set_backward_v3.
  void set_forward_v3(ForwardV3Call forward) { forward_v3_ = std::move(forward); }
  // A version-3 backward (the C++ API's v3 callables), given the same
  // attncheck_call_v3 its forward got; in place of the v2 backward, and it
  // declares a backward as one does (kBackwardFeature).
  void set_backward_v3(BackwardV3Call backward) { backward_v3_ = std::move(backward); }
  std::string name() const override { return name_; }
  // "builtin:<name>" unless set_source says otherwise (the C++ API: "cpp:<name>").
  std::string source() const override { return source_.empty() ? "builtin:" + name_ : source_; }
  void set_source(std::string source) { source_ = std::move(source); }
  Outcome run(const Problem& problem) override;
  FeatureBits features() const override {
    return features_ | (backward_v2_ || backward_v3_ ? kBackwardFeature : 0);
  }
  uint32_t promises() const override { return promises_; }
  uint32_t kv_formats() const override { return kv_formats_; }
  // The stored K and V formats it offers (with kKvFormatsFeature among its features).
  void set_kv_formats(uint32_t formats) { kv_formats_ = formats; }
  // The ABI v3 numerics it declares (ATTNCHECK_NUMERICS_*).
  uint32_t numerics() const override { return numerics_; }
  void set_numerics(uint32_t numerics) { numerics_ = numerics; }
  // The promises it makes (a built-in's row, a C++ API callable's declaration).
  void set_promises(uint32_t promises) { promises_ = promises; }
  bool shift_buffers(std::size_t bytes) override {
    if (bytes % 64 != 0) return false;
    shift_ = bytes;
    return true;
  }

 private:
  std::string name_, source_;
  ForwardCall forward_;
  ForwardV2Call forward_v2_;
  BackwardV2Call backward_v2_;
  ForwardV3Call forward_v3_;
  BackwardV3Call backward_v3_;
  FeatureBits features_ = kV1Features;
  uint32_t promises_ = 0;
  uint32_t kv_formats_ = 0;
  uint32_t numerics_ = 0;
  std::size_t shift_ = 0;  // where in the region the call's layout starts (shift_buffers)
  // The call's region (call_layout.h), kept between calls: grown, never
  // shrunk, since a law calls with many problems of similar size and fresh
  // pages for every call of a long-context one cost more than the call's
  // checks. Scratch, not state: a copy starts without one. run() is called by
  // one thread at a time, as every Implementation is.
  class Region {
   public:
    Region() = default;
    Region(const Region&) {}
    Region& operator=(const Region&) { return *this; }
    uint8_t* at_least(std::size_t bytes);  // nullptr when it cannot be allocated
   private:
    struct Free { void operator()(uint8_t* p) const { std::free(p); } };
    std::unique_ptr<uint8_t, Free> data_;
    std::size_t bytes_ = 0;
  };
  Region region_;
};

// The built-in of that name (see impls/builtins.h), or nullptr. A new instance
// starts as the program did: a built-in's state between calls is reset
// (BuiltinInfo::reset), so call it once per law for reports that do not
// depend on which laws ran before on the same instance. One instance at a
// time for a built-in with state (its state is the function's, not the object's).
std::unique_ptr<Implementation> make_builtin(std::string_view name);

}  // namespace attncheck
