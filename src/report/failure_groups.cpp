#include "report/failure_groups.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "report/markdown_report.h"
#include "text/printable_text.h"

namespace attncheck {

namespace {

// The laws that are not two_calls, by kind (failure_groups.h says why the
// order). report_test's FailureGroups.EveryLawHasAKind holds this table to
// the catalogue.
constexpr std::pair<std::string_view, Directness> kKinds[] = {
    {"matches_oracle", Directness::oracle},
    {"lse_matches_oracle", Directness::oracle},
    {"grad_matches_oracle", Directness::oracle},
    {"quantized_matches_oracle", Directness::oracle},  // stored K/V formats against the oracle
    {"mla_matches_oracle", Directness::oracle},        // V as a view of K against the oracle
    {"weights_sum_to_one", Directness::exact_value},
    {"weights_in_unit_interval", Directness::exact_value},
    {"masked_weights_zero", Directness::exact_value},
    {"finite_for_finite_inputs", Directness::exact_value},
    {"nan_propagates", Directness::exact_value},
    {"output_in_value_hull", Directness::exact_value},
    {"uniform_on_zero_query", Directness::exact_value},
    {"single_key_passthrough", Directness::exact_value},
    {"fully_masked_rows_zero", Directness::exact_value},
    {"query_sensitivity", Directness::exact_value},  // against exact attention's response
    {"softcap_bounds_weights", Directness::exact_value},
    {"grad_key_shift_zero", Directness::exact_value},
    {"grad_values_sum", Directness::exact_value},
    {"grad_empty_rows_zero", Directness::exact_value},
    {"no_crash", Directness::process},
    {"no_timeout", Directness::process},
    {"no_out_of_bounds_write", Directness::process},
    {"writes_every_output", Directness::process},
};

// Disjoint sets over the failing laws' indices.
struct Sets {
  std::vector<std::size_t> parent;
  explicit Sets(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), std::size_t{0}); }
  std::size_t root(std::size_t a) {
    while (parent[a] != a) a = parent[a] = parent[parent[a]];
    return a;
  }
  void join(std::size_t a, std::size_t b) { parent[root(a)] = root(b); }
};

}  // namespace

Directness law_directness(std::string_view law) {
  for (const auto& [name, kind] : kKinds)
    if (name == law) return kind;
  return Directness::two_calls;
}

std::string_view directness_name(Directness d) {
  switch (d) {
    case Directness::oracle:
      return "oracle";
    case Directness::exact_value:
      return "exact_value";
    case Directness::two_calls:
      return "two_calls";
    case Directness::process:
      return "process";
  }
  return "two_calls";
}

std::string diagnosis_key(const std::string& diagnosis) {
  if (!diagnosis.starts_with("behaves like: ")) return diagnosis;
  const std::size_t seen = diagnosis.rfind(" (seen ");
  return seen == std::string::npos || diagnosis.back() != ')' ? diagnosis : diagnosis.substr(0, seen);
}

std::vector<FailureGroup> failure_groups(const ImplementationResult& impl) {
  std::vector<std::size_t> failing;  // indices into impl.laws, catalogue order
  for (std::size_t k = 0; k < impl.laws.size(); ++k)
    if (impl.laws[k].failed() && !impl.laws[k].expected_fail()) failing.push_back(k);
  const auto law = [&](std::size_t a) -> const LawResult& { return impl.laws[failing[a]]; };
  const auto shares_diagnosis = [&](std::size_t a, std::size_t b) {
    return !law(a).run.diagnosis.empty() && diagnosis_key(law(a).run.diagnosis) == diagnosis_key(law(b).run.diagnosis);
  };
  const auto shares_case = [&](std::size_t a, std::size_t b) {
    return law(a).run.counterexample && law(b).run.counterexample && *law(a).run.counterexample == *law(b).run.counterexample;
  };
  Sets sets(failing.size());
  for (std::size_t a = 0; a < failing.size(); ++a)
    for (std::size_t b = a + 1; b < failing.size(); ++b)
      if (shares_diagnosis(a, b) || shares_case(a, b)) sets.join(a, b);

  std::vector<FailureGroup> groups;
  std::vector<std::size_t> group_of_root(failing.size(), failing.size());
  for (std::size_t a = 0; a < failing.size(); ++a) {  // catalogue order: groups by their first law
    std::size_t& g = group_of_root[sets.root(a)];
    if (g == failing.size()) g = groups.size(), groups.emplace_back();
    FailureGroup& group = groups[g];
    for (std::size_t b : group.laws) {
      const std::size_t bi = static_cast<std::size_t>(std::find(failing.begin(), failing.end(), b) - failing.begin());
      group.same_diagnosis = group.same_diagnosis || shares_diagnosis(a, bi);
      group.same_case = group.same_case || shares_case(a, bi);
    }
    group.laws.push_back(failing[a]);
  }
  for (FailureGroup& g : groups) {
    std::stable_sort(g.laws.begin(), g.laws.end(), [&](std::size_t a, std::size_t b) {
      return law_directness(impl.laws[a].run.law) < law_directness(impl.laws[b].run.law);
    });
    if (!g.same_diagnosis) continue;
    // The most direct law whose diagnosis another law of the group shares.
    const auto key = [&](std::size_t k) { return diagnosis_key(impl.laws[k].run.diagnosis); };
    for (std::size_t a = 0; a < g.laws.size() && g.diagnosis.empty(); ++a)
      for (std::size_t b = 0; b < g.laws.size(); ++b)
        if (a != b && !impl.laws[g.laws[a]].run.diagnosis.empty() && key(g.laws[a]) == key(g.laws[b])) {
          g.diagnosis = impl.laws[g.laws[a]].run.diagnosis;
          break;
        }
  }
  return groups;
}

namespace {

std::string shared_words(const FailureGroup& g) {
  return g.same_diagnosis && g.same_case ? "same diagnosis, same shrunk case"
         : g.same_diagnosis             ? "same diagnosis"
                                        : "same shrunk case";
}

std::string law_names(const ImplementationResult& impl, const std::vector<std::size_t>& laws, std::size_t except) {
  std::string names;
  for (std::size_t k : laws)
    if (k != except) names += (names.empty() ? "" : ", ") + impl.laws[k].run.law;
  return names;
}

}  // namespace

std::string failure_group_note(const ImplementationResult& impl, std::size_t law) {
  for (const FailureGroup& g : failure_groups(impl))
    if (g.laws.size() > 1 && std::find(g.laws.begin(), g.laws.end(), law) != g.laws.end())
      return "likely one cause with: " + law_names(impl, g.laws, law) + " (" + shared_words(g) +
             "); most direct first: " + law_names(impl, g.laws, impl.laws.size());
  return "";
}

std::string failure_groups_markdown(const RunReport& report) {
  std::string md;
  for (const ImplementationResult& i : report.implementations) {
    if (report.default_run && i.expectation == Expectation::must_be_caught) continue;  // its failures are not listed
    for (const FailureGroup& g : failure_groups(i)) {
      if (g.laws.size() < 2) continue;
      if (md.empty()) md = "\n### Likely one cause\n\n";
      md += "- **" + markdown_cell(i.name) + "**: " + std::to_string(g.laws.size()) + " failing laws (" +
            shared_words(g) + (g.diagnosis.empty() ? "" : ": " + markdown_cell(g.diagnosis)) +
            "), most direct first: " + markdown_cell(law_names(i, g.laws, i.laws.size())) + "\n";
    }
  }
  return md;
}

std::string failure_group_header(const ImplementationResult& impl, const FailureGroup& g) {
  return "likely one cause (" + shared_words(g) + "): " + std::to_string(g.laws.size()) + " failing laws of " +
         printable(impl.name) + ", most direct first: " + law_names(impl, g.laws, impl.laws.size());
}

}  // namespace attncheck
