// Parsing JSON text nobody vouches for (a case file from anywhere). nlohmann's
// parser is iterative, but dump(), comparisons and destructors of older
// versions recurse once per nesting level: a file of 160 KB nesting 80,000
// arrays overflows the stack in them. So nesting is limited before parsing, by
// a scan that does not recurse, and duplicate keys (which nlohmann resolves
// silently, last one wins) are refused while parsing.
//
// Example usage:
//   nlohmann::json j;
//   if (std::string bad = parse_untrusted_json(text, j); !bad.empty()) fail(bad);
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace attncheck {

// Far more than a case file needs (3 levels), far less than any stack allows.
inline constexpr int kMaxJsonNesting = 64;

// The byte offset where the nesting of arrays and objects first exceeds
// `max_depth` (brackets inside strings do not count), or nullopt.
std::optional<std::size_t> first_too_deep(const std::string& text, int max_depth);

// Parses `text` into `out`: "" on success, else why not ("nesting deeper than
// 64 levels at byte 19", "the key \"law\" appears more than once in one object",
// or nlohmann's parse error).
std::string parse_untrusted_json(const std::string& text, nlohmann::json& out);

// A value for an error message: its JSON text, cut to `max_chars`.
std::string shown(const nlohmann::json& j, std::size_t max_chars = 60);

}  // namespace attncheck
