#include "casefile/float_text.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace attncheck {

std::string exact_float_text(double x) {
  if (std::isnan(x)) return std::signbit(x) ? "-nan" : "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

std::optional<double> parse_float_text(std::string_view text) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (text == "nan") return nan;
  if (text == "-nan") return -nan;
  if (text == "inf") return inf;
  if (text == "-inf") return -inf;
  // strtod would skip leading blanks and read "infinity", "nan(...)": refuse
  // anything that does not start like a number.
  if (text.empty() || text.size() > 64) return std::nullopt;
  const std::size_t first = (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (first >= text.size()) return std::nullopt;
  const char c = text[first];
  if (!((c >= '0' && c <= '9') || c == '.')) return std::nullopt;
  const std::string s(text);  // NUL-terminated for strtod
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  // Overflow gives ±HUGE_VAL with ERANGE; underflow to a subnormal or zero is
  // the nearest double and is kept.
  if (std::isinf(x) || std::isnan(x)) return std::nullopt;
  return x;
}

}  // namespace attncheck
