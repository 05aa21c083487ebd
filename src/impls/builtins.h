// The implementations that ship inside attncheck: three independent correct
// references, which check each other and anchor the laws, and the zoo of
// known faults, which the laws must catch (a law that passes the whole zoo
// tests nothing).
//
// Example usage:
//   for (const BuiltinInfo& b : builtins()) std::printf("%s\n", b.name.data());
//   if (const BuiltinInfo* b = find_builtin("online")) rc = b->forward(&call, err, sizeof err);
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "attncheck/plugin_v3.h"

namespace attncheck {

// The ABI's forward signature (attncheck_impl::forward).
using ForwardFn = int (*)(const attncheck_call*, char*, size_t);
// The ABI v2 forward signature (attncheck_impl_v2::forward).
using ForwardV2Fn = int (*)(const attncheck_call_v2*, char*, size_t);
// The ABI v3 forward signature (attncheck_impl_v3::forward).
using ForwardV3Fn = int (*)(const attncheck_call_v3*, char*, size_t);
// The ABI v2 backward signature (attncheck_impl_v2::backward).
using BackwardV2Fn = int (*)(const attncheck_call_v2*, const attncheck_grad*, char*, size_t);

enum class BuiltinKind { reference, zoo };

// One built-in's row, written with designated initialisers (builtins.cpp).
struct BuiltinInfo {
  std::string_view name;         // as on the command line and in reports; NUL-terminated
  BuiltinKind kind = BuiltinKind::reference;
  std::string_view description;  // one line; for the zoo, what the fault is
  ForwardFn forward = nullptr;
  // For a built-in that keeps state between calls: puts it back as at start,
  // for each new instance (make_builtin), so that what a law sees does not
  // depend on the laws an earlier instance ran. nullptr: stateless.
  void (*reset)() = nullptr;
  // A built-in that speaks ABI v2: its v2 entry and the features it declares.
  // When set, it is called through v2 for every problem (v1-expressible ones
  // included), exactly as the plugin host calls a v2 plugin.
  ForwardV2Fn forward_v2 = nullptr;
  uint32_t features = 0;
  // Its v2 backward, or nullptr: no gradients.
  BackwardV2Fn backward_v2 = nullptr;
  // Its v3 forward, or nullptr: when set (with forward_v2), every forward call
  // goes through version 3 (abi_call_v3), and `features` may hold the v3 bits
  // it computes (ATTNCHECK_FEATURE_PACKED).
  ForwardV3Fn forward_v3 = nullptr;
  // The ABI version 3 promises it makes (ATTNCHECK_PROMISE_*, plugin_v3.h),
  // judged bit for bit by the promise laws: only what its code keeps on
  // every call (a v2 built-in only; 0: none).
  uint32_t promises = 0;
  // With kKvFormatsFeature among `features`: the stored K and V formats its v3
  // forward offers, bit (1u << f) per attncheck_kv_format f (0: none).
  uint32_t kv_formats = 0;

  // What is known about a zoo member (empty for a reference); every test and
  // script that needs the zoo reads it here, none keeps its own list.
  // The laws that must catch it at every seed: each breaks on almost every
  // case its fault touches (properties/zoo_caught_test.cpp runs them; other
  // laws may catch it too). Every law of the default catalogue but the
  // process laws is pinned by at least one member.
  std::vector<std::string_view> pinned_laws;
  // Words the diagnosis of each pinned law's failing case contains (the start
  // of its fault model's description, after "behaves like: "); "" where no
  // fault model explains the member (its fault leaves no shape to name).
  std::string_view diagnosis;
  // The shape profile (gen/profiles.h) whose cases show its fault, where the
  // small shapes cannot ("default": a fault past 2,048 keys); "" for those
  // shapes. properties/zoo_caught_test.cpp runs its pinned laws there.
  std::string_view profile;
};

// References first (reference, naive, online), then the zoo.
const std::vector<BuiltinInfo>& builtins();
// The built-in of that name, or nullptr.
const BuiltinInfo* find_builtin(std::string_view name);

}  // namespace attncheck
