#include "diagnosis/promise_diagnosis.h"

#include <cstdint>
#include <cstring>
#include <utility>

namespace attncheck {

namespace {

// How many elements of x and y differ in their bits (over their common length).
int64_t moved_bits_differing(const std::vector<double>& x, const std::vector<double>& y) {
  int64_t n = 0;
  for (std::size_t k = 0; k < x.size() && k < y.size(); ++k) n += std::memcmp(&x[k], &y[k], sizeof(double)) != 0;
  return n + static_cast<int64_t>(x.size() > y.size() ? x.size() - y.size() : y.size() - x.size());
}

// The first tensor of a and b that differs (out, lse; or dq, dk, dv), and in how many elements.
std::pair<const char*, int64_t> moved_first_difference(const Outcome& a, const Outcome& b, bool backward) {
  const std::pair<const char*, const std::vector<double> Outcome::*> forward_parts[] = {{"out", &Outcome::out},
                                                                                        {"lse", &Outcome::lse}};
  const std::pair<const char*, const std::vector<double> Outcome::*> grad_parts[] = {
      {"dq", &Outcome::dq}, {"dk", &Outcome::dk}, {"dv", &Outcome::dv}};
  if (backward) {
    for (const auto& [name, part] : grad_parts)
      if (const int64_t n = moved_bits_differing(a.*part, b.*part)) return {name, n};
  } else {
    for (const auto& [name, part] : forward_parts)
      if (const int64_t n = moved_bits_differing(a.*part, b.*part)) return {name, n};
  }
  return {nullptr, 0};
}

}  // namespace

std::string diagnose_moved_buffers(Implementation& impl, const Problem& failing) {
  const bool backward = failing.is_backward();
  if (!(impl.promises() & (backward ? ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD : ATTNCHECK_PROMISE_DETERMINISTIC)))
    return "";
  const Outcome first = impl.run(failing), again = impl.run(failing);
  if (first.status != CallStatus::ok || again.status != CallStatus::ok) return "";
  if (moved_first_difference(first, again, backward).first) return "";  // not repeatable in place: another fault
  for (std::size_t shift = 64; shift <= 512; shift += 64) {
    if (!impl.shift_buffers(shift)) return "";
    const Outcome moved = impl.run(failing);
    impl.shift_buffers(0);
    if (moved.status != CallStatus::ok) return "";
    if (const auto [tensor, n] = moved_first_difference(first, moved, backward); tensor)
      return "behaves like: a kernel whose last bits follow where its buffers lie (the same call in place repeats "
             "every bit; with every buffer " + std::to_string(shift) + " bytes further, " + std::to_string(n) +
             " element(s) of " + tensor + " differ): a path or reduction order chosen by an address or alignment";
  }
  return "";
}

}  // namespace attncheck
