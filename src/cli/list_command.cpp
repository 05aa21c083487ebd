#include "cli/list_command.h"

#include <algorithm>
#include <iomanip>
#include <string>

#include "impls/builtins.h"
#include "law_framework/law.h"

namespace attncheck {

namespace {

// What a zoo member's row says about it (impls/builtins.h): the laws that must
// catch it and the words its diagnosis contains, read by tests/cli/check_reports.py.
// " (caught by LAW, LAW; diagnosed as \"WORDS\")", or "" for a reference.
std::string caught_by(const BuiltinInfo& b) {
  if (b.pinned_laws.empty()) return "";
  std::string s = " (caught by ";
  for (std::size_t n = 0; n < b.pinned_laws.size(); ++n) s.append(n ? ", " : "").append(b.pinned_laws[n]);
  if (!b.diagnosis.empty()) s.append("; diagnosed as \"").append(b.diagnosis).append("\"");
  return s + ")";
}

}  // namespace

int run_list(std::ostream& out) {
  std::size_t name_w = 0, law_w = 0;
  for (const BuiltinInfo& b : builtins()) name_w = std::max(name_w, b.name.size());
  for (const Law& l : all_laws()) law_w = std::max(law_w, l.name.size());
  out << "implementations (--impl NAME):\n";
  for (const BuiltinInfo& b : builtins())
    out << "  " << std::left << std::setw(static_cast<int>(name_w + 2)) << b.name << std::setw(11)
        << (b.kind == BuiltinKind::reference ? "reference" : "zoo") << b.description
        << (b.forward_v2 ? " [ABI v2: " + ((b.features & kAllFeatures) == kAllFeatures ? std::string("every feature") : feature_list(b.features & kAllFeatures)) +
                               (b.backward_v2 ? "; backward" : "") + ((b.features & (kPackedFeature | kPagedFeature | kKvFormatsFeature | kAlibiBatchFeature | kVViewFeature)) ? "; v3: " + feature_list(b.features & (kPackedFeature | kPagedFeature | kKvFormatsFeature | kAlibiBatchFeature | kVViewFeature)) : "") + "]"
                         : std::string())
        << caught_by(b) << "\n";
  out << "laws (--law NAME):\n";
  for (const Law& l : all_laws())
    out << "  " << std::left << std::setw(static_cast<int>(law_w + 2)) << l.name << l.statement
        << (l.in_default_catalogue ? "" : " (opt-in: name it with --law)")
        << (l.required ? " [ABI v2: needs " + feature_list(l.required) + "]" : std::string()) << "\n";
  return 0;
}

}  // namespace attncheck
