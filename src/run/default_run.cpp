#include "run/default_run.h"

#include "impls/builtins.h"

namespace attncheck {

std::vector<const Law*> pinned_opt_in_laws(const BuiltinInfo& member) {
  std::vector<const Law*> laws;
  for (std::string_view name : member.pinned_laws)
    if (const Law* law = find_law(name); law && !law->in_default_catalogue) laws.push_back(law);
  return laws;
}

std::vector<Target> default_targets(bool default_catalogue) {
  const BuiltinInfo* reference = find_builtin("reference");
  std::vector<Target> targets;
  for (const BuiltinInfo& b : builtins()) {
    const std::string name(b.name);
    const bool forward_is_references = b.kind == BuiltinKind::zoo && b.backward_v2 && reference &&
                                       b.forward == reference->forward && b.forward_v2 == reference->forward_v2;
    // A member that breaks a promise is as accurate as the references: only
    // the laws of the promises it makes can catch it, and only those run.
    const bool breaks_a_promise = b.kind == BuiltinKind::zoo && b.promises != 0;
    // A member of a version-3 feature is reference's on every call without
    // that feature (its v2 entry is reference's): only the laws about the
    // feature (which require it) run, as its fault is there. Its feature is
    // the first of these it declares (a paged or stored-format member also
    // declares PACKED, whose laws its fault does not reach).
    FeatureBits own_feature = 0;
    if (b.kind == BuiltinKind::zoo && b.forward_v3 && reference && b.forward_v2 == reference->forward_v2)
      for (const FeatureBits f : {kPagedFeature, kKvFormatsFeature, kAlibiBatchFeature, kBroadcastKvFeature,
                                  kVViewFeature, kPackedFeature})
        if (b.features & f) {
          own_feature = f;
          break;
        }
    targets.push_back(Target{
        .name = name,
        .source = "builtin:" + name,
        .open = builtin_factory(name),
        .new_instance_per_law = true,
        .expectation = b.kind == BuiltinKind::reference ? Expectation::must_pass : Expectation::must_be_caught,
        .only_laws_requiring = forward_is_references ? kBackwardFeature : own_feature,
        .only_reason = breaks_a_promise
                           ? "not run in the embedded default: " + name + " is as accurate as the references but for "
                                 "the last bits its ABI v3 promise forbids; only the laws of its promises run"
                       : forward_is_references
                           ? "not run in the embedded default: " + name + "'s forward is reference's, judged in reference's row"
                       : own_feature
                           ? "not run in the embedded default: " + name + " is reference's on every call without ABI v3's " +
                                 std::string(feature_name(own_feature)) + "; only the laws about " +
                                 std::string(feature_name(own_feature)) + " run"
                           : std::string(),
        .only_laws_promising = breaks_a_promise ? b.promises : 0u,
        .extra_laws = default_catalogue ? pinned_opt_in_laws(b) : std::vector<const Law*>{},
    });
  }
  return targets;
}

}  // namespace attncheck
