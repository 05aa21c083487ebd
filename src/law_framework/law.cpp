#include "law_framework/law.h"

#include "law_framework/law_calls.h"

namespace attncheck {

Verdict check_case(const Law& law, Implementation& impl, const Problem& problem) {
  if (const FeatureBits beyond = problem.features() & ~law.features)
    return Verdict::not_applicable("the case uses " + feature_list(beyond) + ", which " + law.name +
                                   " does not judge");
  if (const uint32_t missing = law.required_promises & ~impl.promises())
    return Verdict::not_applicable(law.name + " judges " + promise_list(missing) + ", which " + impl.name() +
                                   " does not declare (attncheck_impl_v3::promises)");
  Verdict v = law.check(impl, problem);
  complete_calls(problem, v.calls);
  return v;
}

std::optional<Verdict> unusable(const Outcome& o) {
  switch (o.status) {
    case CallStatus::ok: return std::nullopt;
    case CallStatus::unsupported: return Verdict{VerdictStatus::unsupported, o.message, o.status, {}, {}};
    case CallStatus::error: return Verdict::fail("the call failed: " + o.message);
    default:
      return Verdict{VerdictStatus::fault, std::string(call_status_name(o.status)) + ": " + o.message, o.status, {}, {}};
  }
}

const Law* find_law(std::string_view name) {
  for (const Law& l : all_laws())
    if (l.name == name) return &l;
  return nullptr;
}

std::vector<std::string> renamed_law(std::string_view old_name) {
  struct Rename {
    std::string_view old_name;
    std::vector<std::string> now;
  };
  static const Rename kRenames[] = {
      {"promised_deterministic_forward", {"rerun_bit_identical"}},
      {"promised_deterministic_backward", {"backward_rerun_bit_identical"}},
      {"promised_batch_invariance", {"batch_invariance"}},
      {"aliases_equal_copies", {"page_alias_equals_copy"}},
      {"dead_bytes_inert", {"dead_page_bytes_inert", "unread_table_entries_inert"}},
  };
  for (const Rename& r : kRenames)
    if (r.old_name == old_name) return r.now;
  return {};
}

const Law* process_law_for(CallStatus s) {
  if (s == CallStatus::ok) return nullptr;
  for (const Law& l : all_laws())
    if (l.judges_fault == s) return &l;
  return nullptr;
}

bool is_process_law(std::string_view name) {
  const Law* law = find_law(name);
  return law && law->is_process_law();
}

}  // namespace attncheck
