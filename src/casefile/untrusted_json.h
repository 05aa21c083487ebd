// Reading and parsing JSON nobody vouches for: every JSON input of attncheck
// (a case file from anywhere, a --config file) goes through here, so all have
// the same limits on size and nesting and the same refusal of what is not a
// regular file. nlohmann's
// parser is iterative, but dump(), comparisons and destructors of older
// versions recurse once per nesting level: a file of 160 KB nesting 80,000
// arrays overflows the stack in them. So nesting is limited before parsing, by
// a scan that does not recurse, and duplicate keys (which nlohmann resolves
// silently, last one wins) are refused while parsing.
//
// Example usage:
//   std::string text, bad;
//   nlohmann::json j;
//   if (!read_untrusted_file(path, text, bad) || !(bad = parse_untrusted_json(text, j)).empty()) fail(bad);
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace attncheck {

// Far more than a case file or a config needs (3 levels), far less than any stack allows.
inline constexpr int kMaxJsonNesting = 64;
// The JSON text itself; the parsed document costs a small multiple of this.
inline constexpr int64_t kMaxJsonInputBytes = int64_t{256} << 20;  // 256 MiB

// Reads the whole file at `path` into `text`, at most kMaxJsonInputBytes.
// Only a regular file is read: a FIFO, a device, a socket or a folder is
// refused at once (it is opened O_NONBLOCK, so a FIFO without a writer cannot
// hang the reader, then fstat'ed). False with `error` saying why ("not a
// regular file but a FIFO", "cannot open: No such file or directory", "file
// of 300000000 bytes exceeds the limit of 268435456").
bool read_untrusted_file(const std::string& path, std::string& text, std::string& error);

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
