#include "law_framework/law_calls.h"

#include <bit>
#include <cmath>
#include <sstream>
#include <type_traits>

#include "problem/problem_fields.h"

namespace attncheck {
namespace {

// Equal as the case file and Problem::operator== see them: doubles by their bits.
template <class T>
bool same(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, double>) return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
  else return a == b;
}

std::string number_text(double x) {
  if (std::isnan(x)) return "default";  // a NaN scale is the default scale
  std::ostringstream os;
  os.precision(6);
  os << x;
  return os.str();
}

template <class T>
std::string value_text(const T& x) {
  if constexpr (std::is_same_v<T, double>) return number_text(x);
  else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
  else if constexpr (std::is_same_v<T, DType>) return std::string(info(x).name);
  else if constexpr (std::is_same_v<T, Causal>) return std::string(causal_name(x));
  else if constexpr (std::is_integral_v<T>) return std::to_string(x);
  else return "";  // a record (broadcast, layouts): named, not shown
}

// "k (3 of 8 elements)", "v (64 elements, were 16)", "value_dim 1 -> 4", "layouts".
template <class T>
void note_change(std::vector<std::string>& out, const char* name, const T& a, const T& b) {
  if constexpr (is_vector<T>) {
    if (a.size() != b.size()) {
      out.push_back(std::string(name) + " (" + std::to_string(b.size()) + " elements, were " +
                    std::to_string(a.size()) + ")");
      return;
    }
    std::size_t changed = 0;
    for (std::size_t k = 0; k < a.size(); ++k) changed += !same(a[k], b[k]);
    if (changed) out.push_back(std::string(name) + " (" + std::to_string(changed) + " of " + std::to_string(a.size()) +
                               " elements)");
  } else if (!same(a, b)) {
    const std::string from = value_text(a), to = value_text(b);
    out.push_back(from.empty() ? std::string(name) : std::string(name) + " " + from + " -> " + to);
  }
}

}  // namespace

std::string changes_from(const Problem& base, const Problem& derived) {
  std::vector<std::string> changes;
  for_each_field<Problem>(
      [&](auto f, const auto& a, const auto& b) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, Shape>) {
          for_each_field<Shape>([&](auto g, const auto& x, const auto& y) { note_change(changes, g.name, x, y); }, a,
                                b);
        } else {
          note_change(changes, f.name, a, b);
        }
      },
      base, derived);
  std::string text;
  for (std::size_t k = 0; k < changes.size(); ++k) text += (k ? ", " : "") + changes[k];
  return text;
}

void complete_calls(const Problem& base, std::vector<LawCall>& calls) {
  // A call equal to the case is the case, whatever the law's construction was
  // (replayed, a saved derived call is its own first call).
  for (LawCall& c : calls)
    if (c.problem == base) c.derivation = "the case itself";
    else if (c.derivation.empty()) c.derivation = "the case with " + changes_from(base, c.problem);
}

const LawCall* call_to_save(const Problem& base, const std::vector<LawCall>& calls) {
  for (const LawCall& c : calls)
    if (c.problem == base) return nullptr;
  for (const LawCall& c : calls)
    if (c.replays) return &c;
  return nullptr;
}

std::string saved_call_history(const Problem& base, const std::vector<LawCall>& calls, const LawCall& saved) {
  std::string text = "the call that failed (" + saved.role + "): " + saved.derivation + "; the shrunk case was " +
                     base.header();
  for (const LawCall& c : calls)
    if (&c != &saved) text += "; compared with (" + c.role + "): " + c.derivation;
  return text;
}

}  // namespace attncheck
