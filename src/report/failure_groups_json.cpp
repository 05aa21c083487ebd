#include "report/failure_groups_json.h"

#include "report/failure_groups.h"

namespace attncheck {

nlohmann::ordered_json failure_groups_to_json(const ImplementationResult& impl) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const FailureGroup& g : failure_groups(impl)) {
    if (g.laws.size() < 2) continue;
    nlohmann::ordered_json laws = nlohmann::ordered_json::array(), kinds = nlohmann::ordered_json::array();
    for (std::size_t k : g.laws) {
      laws.push_back(impl.laws[k].run.law);
      kinds.push_back(std::string(directness_name(law_directness(impl.laws[k].run.law))));
    }
    nlohmann::ordered_json j;
    j["laws"] = laws;
    j["directness"] = kinds;
    j["same_diagnosis"] = g.same_diagnosis;
    j["same_case"] = g.same_case;
    if (g.same_diagnosis) j["diagnosis"] = g.diagnosis;
    groups.push_back(j);
  }
  return groups;
}

}  // namespace attncheck
