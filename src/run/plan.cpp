#include "run/plan.h"

#include <algorithm>
#include <sstream>

namespace attncheck {

DTypeChoice parse_dtypes(const std::string& text) {
  DTypeChoice choice;
  if (text == "all") {
    choice.dtypes = every_dtype();
    return choice;
  }
  std::stringstream in(text);
  for (std::string word; std::getline(in, word, ',');) {
    const std::optional<DType> t = dtype_from_name(word);
    if (!t) {
      choice.unknown = word;
      choice.dtypes.clear();
      return choice;
    }
    if (std::find(choice.dtypes.begin(), choice.dtypes.end(), *t) == choice.dtypes.end()) choice.dtypes.push_back(*t);
  }
  return choice;
}

std::string unknown_law_problem(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (find_law(name)) continue;
    std::string all;
    for (const Law& l : all_laws()) all += (all.empty() ? "" : ", ") + l.name;
    return "unknown law '" + name + "'; the laws are: " + all;
  }
  return "";
}

std::vector<const Law*> select_laws(const std::vector<std::string>& names) {
  std::vector<const Law*> laws;
  for (const Law& l : all_laws())
    if (names.empty() ? l.in_default_catalogue : std::find(names.begin(), names.end(), l.name) != names.end())
      laws.push_back(&l);
  return laws;
}

bool probe_target(Target& target, const std::vector<DType>& requested) {
  TargetProbes probes;
  probes.dtypes = probe_dtypes(*target.loaded, requested);
  // The shapes in the first dtype it offers: a shape limit is the kernel's, not the dtype's.
  if (!probes.dtypes.supported.empty()) probes.shapes = probe_shapes(*target.loaded, probes.dtypes.supported.front());
  probes.not_judged = target.loaded->declared_not_judged();
  const bool any = !probes.dtypes.supported.empty();
  target.probes = std::move(probes);
  return any;
}

}  // namespace attncheck
