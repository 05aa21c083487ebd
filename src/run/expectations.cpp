#include "run/expectations.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "casefile/untrusted_json.h"
#include "law_framework/law.h"
#include "text/printable_text.h"

namespace attncheck {

const ExpectedFailure* Expectations::find(const std::string& implementation, const std::string& law) const {
  for (const ExpectedFailure& e : expect_fail)
    if (e.law == law && (e.implementation.empty() || e.implementation == implementation)) return &e;
  return nullptr;
}

std::optional<std::string> Expectations::expected_failure(const std::string& implementation,
                                                          const std::string& law) const {
  if (const ExpectedFailure* e = find(implementation, law)) return e->reason;
  return std::nullopt;
}

bool Expectations::skipped(const std::string& law) const {
  return std::find(skip_laws.begin(), skip_laws.end(), law) != skip_laws.end();
}

bool add_expect_fail(const std::string& text, Expectations& into, std::string& error) {
  // Law names hold neither '/' nor ':'; a reason may hold both (a URL), so
  // the reason starts at the first ':' and the implementation ends at the
  // last '/' before it.
  const std::size_t colon = text.find(':');
  const std::string target = text.substr(0, colon);
  ExpectedFailure e;
  e.reason = colon == std::string::npos ? "" : text.substr(colon + 1);
  const std::size_t slash = target.rfind('/');
  e.law = slash == std::string::npos ? target : target.substr(slash + 1);
  if (slash != std::string::npos) e.implementation = target.substr(0, slash);
  e.origin = "--expect-fail " + text;
  if (e.law.empty() || (slash != std::string::npos && e.implementation.empty())) {
    error = "--expect-fail " + printable(text) + ": expected LAW[:REASON] or IMPL/LAW[:REASON]";
    return false;
  }
  into.expect_fail.push_back(std::move(e));
  return true;
}

bool load_expectations_config(const std::string& path, Expectations& into, std::string& error) {
  using nlohmann::json;
  auto fail = [&](const std::string& why) {
    error = "--config " + printable(path) + ": " + printable(why);
    return false;
  };
  // The same reading and limits as a case file's: a FIFO or a device is
  // refused at once, the size and the nesting are bounded before parsing
  // (a value nested 200,000 deep once overflowed the stack).
  std::string text, why;
  if (!read_untrusted_file(path, text, why)) return fail(why);
  json root;
  if (why = parse_untrusted_json(text, root); !why.empty()) return fail("not valid JSON: " + why);
  if (!root.is_object()) return fail("the top level must be a JSON object");
  for (const auto& [key, value] : root.items())
    if (key != "skip_law" && key != "expect_fail")
      return fail("unknown key \"" + key + "\" (the keys are skip_law and expect_fail)");
  if (auto s = root.find("skip_law"); s != root.end()) {
    if (!s->is_array()) return fail("skip_law must be an array of law names");
    for (const json& law : *s) {
      if (!law.is_string()) return fail("skip_law holds " + shown(law) + ", not a law name");
      into.skip_laws.push_back(law.get<std::string>());
    }
  }
  if (auto x = root.find("expect_fail"); x != root.end()) {
    if (!x->is_array()) return fail("expect_fail must be an array of {\"law\", \"implementation\", \"reason\"}");
    for (std::size_t k = 0; k < x->size(); ++k) {
      const json& item = (*x)[k];
      const std::string where = "expect_fail[" + std::to_string(k) + "]";
      if (!item.is_object()) return fail(where + " must be an object");
      ExpectedFailure e;
      e.origin = path + ": " + where;
      for (const auto& [key, value] : item.items()) {
        if (key != "law" && key != "implementation" && key != "reason" && key != "strict")
          return fail(where + ": unknown key \"" + key + "\" (the keys are law, implementation, reason and strict)");
        if (key == "strict") {
          if (!value.is_boolean()) return fail(where + ".strict must be true or false");
          continue;
        }
        if (!value.is_string()) return fail(where + "." + key + " must be a string");
      }
      if (!item.contains("law")) return fail(where + " needs \"law\"");
      e.law = item["law"].get<std::string>();
      if (item.contains("implementation")) e.implementation = item["implementation"].get<std::string>();
      if (item.contains("reason")) e.reason = item["reason"].get<std::string>();
      if (item.contains("strict")) e.strict = item["strict"].get<bool>();
      into.expect_fail.push_back(std::move(e));
    }
  }
  return true;
}

std::string expectations_problem(const Expectations& e, const std::vector<std::string>& implementations) {
  auto law_names = [] {
    std::string s;
    for (const Law& l : all_laws()) s += (s.empty() ? "" : ", ") + l.name;
    return s;
  };
  for (const std::string& law : e.skip_laws)
    if (!find_law(law)) return "--skip-law: unknown law '" + printable(law) + "'; the laws are: " + law_names();
  for (const ExpectedFailure& x : e.expect_fail) {
    if (!find_law(x.law))
      return printable(x.origin) + ": unknown law '" + printable(x.law) + "'; the laws are: " + law_names();
    if (!x.implementation.empty() && !implementations.empty() &&
        std::find(implementations.begin(), implementations.end(), x.implementation) == implementations.end()) {
      std::string names;
      for (const std::string& n : implementations) names += (names.empty() ? "" : ", ") + printable(n);
      return printable(x.origin) + ": no implementation named '" + printable(x.implementation) +
             "' in this run; they are: " + names;
    }
  }
  return "";
}

}  // namespace attncheck
