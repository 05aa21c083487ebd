#include "problem/number_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace attncheck {

namespace {

std::string special_text(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  return std::signbit(x) ? "-0" : "0";  // x == 0
}

// Whether t holds x exactly (NaN and infinities: every dtype has them).
bool holds(double x, DType t) { return !std::isfinite(x) || round_to(t, x) == x; }

// The fewest significant digits (1..17) whose text reads back as x in t.
int shortest_digits(double x, DType t) {
  for (int n = 1; n < 17; ++n)
    if (round_to(t, std::strtod(digits_text(x, n).c_str(), nullptr)) == x) return n;
  return 17;
}

// The position of x among the values of t, counted from 0 (by 1 per step of
// t; between two neighbours, linearly): the integers are t's own values.
// long double: f64's positions reach 2^63, which a double would round.
long double position(double x, DType t) {
  const DTypeInfo& d = info(t);
  const int p = static_cast<int>(std::lround(-std::log2(d.unit_roundoff)));  // significand bits: 24 for f32
  const int emin = std::ilogb(d.min_normal);                                  // -126 for f32
  const long double a = std::abs(static_cast<long double>(x));
  long double r;
  if (a < d.min_normal) {
    r = a / d.min_subnormal;  // subnormals: evenly spaced from 0
  } else {
    const int e = std::ilogb(x);
    // Each binade above the subnormals holds 2^(p-1) values.
    r = std::ldexp(static_cast<long double>(e - emin + 1), p - 1) + (std::ldexp(a, p - 1 - e) - std::ldexp(1.0L, p - 1));
  }
  return std::signbit(x) ? -r : r;
}

// The number of ulps, short: whole numbers as they are below a million.
std::string ulp_count_text(double n) {
  char buf[64];
  if (n < 1e6 && n == std::floor(n)) std::snprintf(buf, sizeof buf, "%.0f", n);
  else if (n < 10) std::snprintf(buf, sizeof buf, "%.2g", n);
  else if (n < 1e6) std::snprintf(buf, sizeof buf, "%.0f", n);
  else std::snprintf(buf, sizeof buf, "%.2g", n);
  return buf;
}

std::string short_text(double x) {
  char buf[64];
  if (x >= 10 && x < 1e6) std::snprintf(buf, sizeof buf, "%.0f", x);  // 510, not 5.1e+02
  else std::snprintf(buf, sizeof buf, "%.2g", x);
  return buf;
}

}  // namespace

std::string digits_text(double x, int digits) {
  if (!std::isfinite(x) || x == 0) return special_text(x);
  const int whole = static_cast<int>(std::floor(std::log10(std::abs(x)))) + 1;
  if (whole >= 1 && whole <= 15 && digits < whole) digits = whole;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::string shortest_text(double x, DType t) {
  if (!std::isfinite(x) || x == 0) return special_text(x);
  if (!holds(x, t)) return digits_text(x, 6);
  return digits_text(x, shortest_digits(x, t));
}

namespace {

// The pair as pair_text prints it; `t` nullopt: neither value is one of a dtype.
PairText pair_of(double a, double b, std::optional<DType> t) {
  const bool same = (a == b && std::signbit(a) == std::signbit(b)) || (std::isnan(a) && std::isnan(b));
  const auto held = [&](double x) { return t && std::isfinite(x) && x != 0 && holds(x, *t); };
  // Six digits, or fewer for a value the dtype holds in fewer, while that tells them apart.
  const auto at_six = [&](double x) { return digits_text(x, held(x) ? std::min(6, shortest_digits(x, *t)) : 6); };
  PairText r{at_six(a), at_six(b)};
  if (same || r.a != r.b) return r;
  // Alike at six: each held value with all its shortest digits (values the
  // dtype holds print alike only when they are the same value), the others
  // with at least as many, then more until they differ.
  int n = 7;
  for (double x : {a, b})
    if (held(x)) n = std::max(n, shortest_digits(x, *t));
  for (; n <= 17; ++n) {
    r = {held(a) ? shortest_text(a, *t) : digits_text(a, n), held(b) ? shortest_text(b, *t) : digits_text(b, n)};
    if (r.a != r.b) return r;
  }
  // A held value's shortest text can read as exactly the other, unheld value:
  // all 17 digits of both.
  return {digits_text(a, 17), digits_text(b, 17)};
}

}  // namespace

PairText pair_text(double a, double b, DType t) { return pair_of(a, b, t); }

PairText pair_text(double a, double b) { return pair_of(a, b, std::nullopt); }

std::optional<double> ulp_distance(double a, double b, DType t) {
  if (!std::isfinite(a) || !std::isfinite(b)) return std::nullopt;
  if (a == b) return 0.0;
  return static_cast<double>(std::abs(position(a, t) - position(b, t)));
}

std::string difference_text(double a, double b, DType t, double bound) {
  std::string r;
  if (const std::optional<double> n = ulp_distance(a, b, t))
    r = ulp_count_text(*n) + " ulp (" + std::string(dtype_name(t)) + ")";
  if (std::isfinite(bound)) {
    const double d = std::abs(a - b);
    std::string part;
    if (bound > 0 && std::isfinite(d)) part = short_text(d / bound) + "x the allowed difference " + digits_text(bound, 3);
    else part = "allowed difference " + digits_text(bound, 3);
    r += (r.empty() ? "" : ", ") + part;
  }
  return r;
}

std::string compared_values(std::string_view name_a, double a, std::string_view name_b, double b, DType t,
                            double bound) {
  const PairText p = pair_text(a, b, t);
  std::string r = std::string(name_a) + " " + p.a + ", " + std::string(name_b) + " " + p.b;
  const std::string d = difference_text(a, b, t, bound);
  return d.empty() ? r : r + ": " + d;
}

}  // namespace attncheck
