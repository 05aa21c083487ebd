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
    // A member of ABI v3's paged keys is reference's on every unpaged call:
    // only the laws about paging (which require it) run, as its faults are paged.
    const bool paged_only = b.kind == BuiltinKind::zoo && (b.features & kPagedFeature) && b.forward_v3 && reference &&
                            b.forward_v2 == reference->forward_v2;
    // Likewise a member of ABI v3's ALiBi slopes per (batch, head): reference's
    // on every call whose slopes are version 2's [heads].
    const bool alibi_batch_only = b.kind == BuiltinKind::zoo && (b.features & kAlibiBatchFeature) && b.forward_v3 &&
                                  reference && b.forward_v2 == reference->forward_v2;
    // And a member of ABI v3's broadcast K and V: reference's on every dense call.
    const bool broadcast_only = b.kind == BuiltinKind::zoo && (b.features & kBroadcastKvFeature) && b.forward_v3 &&
                                reference && b.forward_v2 == reference->forward_v2;
    targets.push_back(Target{
        .name = name,
        .source = "builtin:" + name,
        .open = builtin_factory(name),
        .new_instance_per_law = true,
        .expectation = b.kind == BuiltinKind::reference ? Expectation::must_pass : Expectation::must_be_caught,
        .only_laws_requiring = forward_is_references ? kBackwardFeature
                               : paged_only          ? kPagedFeature
                               : alibi_batch_only    ? kAlibiBatchFeature
                               : broadcast_only      ? kBroadcastKvFeature
                                                     : FeatureBits{0},
        .only_reason = breaks_a_promise
                           ? "not run in the embedded default: " + name + " is as accurate as the references but for "
                                 "the last bits its ABI v3 promise forbids; only the laws of its promises run"
                       : forward_is_references
                           ? "not run in the embedded default: " + name + "'s forward is reference's, judged in reference's row"
                       : paged_only
                           ? "not run in the embedded default: " + name + " is reference's on every unpaged call; only "
                                 "the laws about paged keys run"
                       : alibi_batch_only
                           ? "not run in the embedded default: " + name + " is reference's on every call with version "
                                 "2's ALiBi slopes; only the laws about slopes per (batch, head) run"
                       : broadcast_only
                           ? "not run in the embedded default: " + name + " is reference's on every call with dense k "
                                 "and v; only the laws about broadcast K and V run"
                           : std::string(),
        .only_laws_promising = breaks_a_promise ? b.promises : 0u,
        .extra_laws = default_catalogue ? pinned_opt_in_laws(b) : std::vector<const Law*>{},
    });
  }
  return targets;
}

}  // namespace attncheck
