// Numbers in messages: compared values printed so that values that differ
// look different, and how far apart they are in units of the dtype.
//
// A law that says "sum to 1, not 1" or "got 1.00095, oracle 1.00095" has
// compared two values that differ beyond the sixth digit and printed both at
// six. Here a value the dtype holds prints with the shortest digits that read
// back as that value of the dtype (f32 1.0009537 is "1.0009537", f16 1.0009766
// is "1.001"), and a value it does not hold (the oracle's exact double, a sum
// in double) with as many digits as it takes to differ from the value it is
// compared with. Then the distance in ulps of the dtype and, where a bound is
// at hand, relative to it:
//   compared_values("got", 1.00095367f, "oracle", 1.0009531, DType::f32, 4e-7)
//   == "got 1.0009537, oracle 1.0009531: 4.8 ulp (f32), 1.4x the allowed difference 4e-07"
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "problem/dtype.h"

namespace attncheck {

// x with the fewest significant digits that read back (rounded to t) as x
// itself, when t holds x; else x with 6 significant digits. NaN is "NaN",
// infinities "inf" and "-inf", negative zero "-0". Plain notation while the
// integer part has at most 15 digits (65504, not 6.5504e+04).
std::string shortest_text(double x, DType t);

// x with `digits` significant digits (at least its integer part's digits, as
// shortest_text), NaN/inf/-0 written as there.
std::string digits_text(double x, int digits);

// a and b as texts that differ whenever a and b differ (bitwise: -0 and 0
// differ, every NaN is "NaN"): six significant digits (fewer where t holds the
// value in fewer) when that tells them apart; else each value t holds with all
// its shortest digits and each other value with as many digits as it takes.
//   pair_text(0.2689414213699951, 0.33023845067334306, f64) == {"0.268941", "0.330238"}
//   pair_text(f32 0.99999994, 1.0, f32)                      == {"0.99999994", "1"}
struct PairText { std::string a, b; };
PairText pair_text(double a, double b, DType t);
// The same for two quantities attncheck computed in double that are no
// dtype's values (an entropy, a central difference): six digits, more while
// they print alike.
PairText pair_text(double a, double b);

// How many steps of t lie between a and b, counting values t does not hold
// by where they fall between t's neighbours (so 0.5 for the midpoint of two
// neighbours); 0 for a == b (and for 0 and -0). nullopt when either is NaN or
// infinite.
std::optional<double> ulp_distance(double a, double b, DType t);

// "5 ulp (f32)", "4.8 ulp (f32)", "0.5 ulp (f16)", "1.6e+15 ulp (f64)"; and when `bound` is a
// finite number: ", 1.4x the allowed difference 4e-07". Empty when a and b are
// not both finite and no bound is at hand.
std::string difference_text(double a, double b, DType t, double bound = std::numeric_limits<double>::quiet_NaN());

// "<name_a> <a>, <name_b> <b>: <difference_text>", the form laws print a
// compared pair in ("got 1.0009537, oracle 1.0009531: 4.8 ulp (f32)"). The
// names are printed as given: "got", "default scale =".
std::string compared_values(std::string_view name_a, double a, std::string_view name_b, double b, DType t,
                            double bound = std::numeric_limits<double>::quiet_NaN());

}  // namespace attncheck
