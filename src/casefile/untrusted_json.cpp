#include "casefile/untrusted_json.h"

#include <set>
#include <vector>

namespace attncheck {

using nlohmann::json;

std::optional<std::size_t> first_too_deep(const std::string& text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

std::string parse_untrusted_json(const std::string& text, json& out) {
  if (const auto at = first_too_deep(text, kMaxJsonNesting))
    return "arrays and objects nest deeper than " + std::to_string(kMaxJsonNesting) + " levels (at byte " +
           std::to_string(*at) + ")";
  // One set of keys per open object; arrays get an empty slot so that
  // object_end always pops the set its object_start pushed.
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  const json::parser_callback_t track = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: keys.emplace_back(); break;
      case json::parse_event_t::object_end: if (!keys.empty()) keys.pop_back(); break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default: break;
    }
    return true;
  };
  try {
    out = json::parse(text, track);
  } catch (const json::exception& e) {
    return std::string("malformed or truncated JSON: ") + e.what();
  }
  if (!duplicate.empty())
    return "the key " + shown(json(duplicate)) + " appears more than once in one object (which one counts?)";
  return "";
}

std::string shown(const json& j, std::size_t max_chars) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  return s;
}

}  // namespace attncheck
