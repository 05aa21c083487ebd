// Exact text for one tensor element: the C99 hex-float form, which states the
// binary value itself, so a double (and so any f32/f16/bf16 value it holds)
// survives writing and reading bit for bit.
//
// Example usage:
//   exact_float_text(3.0)          == "0x1.8p+1"
//   exact_float_text(-0.0)         == "-0x0p+0"
//   exact_float_text(-NAN)         == "-nan"      (the payload is not kept)
//   parse_float_text("0x1.8p+1")   == 3.0
//   parse_float_text("0.1x")       == std::nullopt
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace attncheck {

// "0x1.8p+1", "-0x0p+0", "nan", "-nan", "inf", "-inf".
std::string exact_float_text(double x);

// Accepts what exact_float_text writes and any other complete C strtod number
// (decimal "0.5", hex); nullopt for anything else, including text that
// overflows to infinity and leading or trailing characters.
std::optional<double> parse_float_text(std::string_view text);

}  // namespace attncheck
