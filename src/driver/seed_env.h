// ATTNCHECK_SEED, read one way everywhere: the CLI, the C++ API, the property
// tests and every test that draws from a seed. A whole number from 0 to
// 2^64 - 1, nothing else: "abc", "12x", "-1", " 7" and a number past 2^64 - 1
// are refused with one message (strtoull would have read "abc" as seed 0 and
// "-1" as 2^64 - 1, so a typo ran a different seed than the one printed).
//
// Example usage:
//   const uint64_t seed = seed_from_env_or(20261130);     // throws SeedEnvError on garbage
//   if (std::optional<uint64_t> s = seed_from_env()) ...   // nullopt: unset or empty
// Header-only, so that the tests of the example plugins, which link only the
// plugin ABI's headers, read the seed the same way.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attncheck {

// The text is not a seed; what() names the variable, the text and what a seed is.
struct SeedEnvError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The seed a text spells: digits only, at most 2^64 - 1; nullopt otherwise.
inline std::optional<uint64_t> parse_seed_text(std::string_view text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  // from_chars takes no sign, space or base prefix, and reports overflow: exactly a whole number.
  const auto [stop, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || stop != end) return std::nullopt;
  return v;
}

// What the error says about a text that is not a seed.
inline std::string seed_env_error(std::string_view text) {
  return "ATTNCHECK_SEED='" + std::string(text) +
         "' is not a seed: a whole number from 0 to 18446744073709551615 (or unset it)";
}

// ATTNCHECK_SEED's seed; nullopt when it is unset or empty. Throws
// SeedEnvError when it is set to anything but a seed.
inline std::optional<uint64_t> seed_from_env() {
  const char* env = std::getenv("ATTNCHECK_SEED");
  if (!env || !*env) return std::nullopt;
  if (const std::optional<uint64_t> seed = parse_seed_text(env)) return seed;
  throw SeedEnvError(seed_env_error(env));
}

// ATTNCHECK_SEED's seed, else `fallback` (unset or empty). Throws SeedEnvError as above.
inline uint64_t seed_from_env_or(uint64_t fallback) { return seed_from_env().value_or(fallback); }

}  // namespace attncheck
