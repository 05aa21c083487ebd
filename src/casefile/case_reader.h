// Reading the fields of a case file's JSON that nobody vouches for: each
// accessor checks the type and range of one field and, when it is wrong,
// throws CaseFileError naming the file and the field ("x.json: problem.q_lens[1]
// = 9 is outside 0..4"). Shared by the schema-1 fields (case_json.cpp) and the
// schema-2 ones (case_json_v2.cpp).
//
// Example usage:
//   const CaseReader r("x.json");
//   const int64_t heads = r.extent(problem, "heads");
//   const std::vector<double> q = r.floats(r.member(problem, "problem.", "q"), "problem.q", want, DType::f32);
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "casefile/case_file.h"
#include "casefile/case_limits.h"
#include "casefile/float_text.h"
#include "casefile/untrusted_json.h"

namespace attncheck {

class CaseReader {
 public:
  using json = nlohmann::json;

  explicit CaseReader(const std::string& name) : name_(name) {}

  [[noreturn]] void fail(const std::string& what) const { throw CaseFileError(name_ + ": " + what); }

  const json& member(const json& obj, const char* path, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(std::string("missing field ") + path + key);
    return *it;
  }

  // The field, or nullptr when it is absent or null (an optional field).
  const json* optional(const json& obj, const char* key) const {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }

  std::string string(const json& obj, const char* path, const char* key, bool required) const {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) fail(std::string("missing field ") + path + key);
      return "";
    }
    if (!it->is_string()) fail(std::string(path) + key + " must be a string");
    return it->get<std::string>();
  }

  // An integer in [lo, hi].
  int64_t integer(const json& j, const std::string& field, int64_t lo, int64_t hi) const {
    if (!j.is_number_integer()) fail(field + " must be an integer, got " + shown(j));
    if (j.is_number_unsigned() ? j.get<uint64_t>() > static_cast<uint64_t>(hi) : j.get<int64_t>() > hi)
      fail(field + " = " + shown(j) + " exceeds " + std::to_string(hi));
    const int64_t x = j.get<int64_t>();
    if (x < lo) fail(field + " = " + std::to_string(x) + " must be at least " + std::to_string(lo));
    return x;
  }

  bool boolean(const json& j, const std::string& field) const {
    if (!j.is_boolean()) fail(field + " must be true or false, got " + shown(j));
    return j.get<bool>();
  }

  // A tensor extent: an integer in [1, kMaxCaseElements].
  int64_t extent(const json& obj, const char* key) const {
    const json& j = member(obj, "problem.", key);
    const std::string field = std::string("problem.") + key;
    if (!j.is_number_integer()) fail(field + " must be an integer, got " + shown(j));
    if (j.is_number_unsigned() ? j.get<uint64_t>() > static_cast<uint64_t>(kMaxCaseElements)
                               : j.get<int64_t>() > kMaxCaseElements)
      fail(field + " = " + shown(j) + " exceeds the limit of " + std::to_string(kMaxCaseElements));
    const int64_t e = j.get<int64_t>();
    if (e < 1) fail(field + " = " + std::to_string(e) + " must be at least 1");
    return e;
  }

  // The product of extents, refused past kMaxCaseElements without overflowing.
  // An extent may be 0 (a packed side's total_q/k of only empty sequences):
  // the product is then 0, never too large, and nothing is divided by it.
  void check_product(const char* what, std::initializer_list<int64_t> extents) const {
    for (int64_t e : extents)
      if (e == 0) return;
    int64_t n = 1;
    for (int64_t e : extents) {
      if (n > kMaxCaseElements / e) {
        std::ostringstream m;
        m << what << " would hold more than the limit of " << kMaxCaseElements << " elements (";
        const char* sep = "";
        for (int64_t x : extents) { m << sep << x; sep = " x "; }
        m << ")";
        fail(m.str());
      }
      n *= e;
    }
  }

  // One element: a hex-float string (or nan/-nan/inf/-inf, or any complete
  // C number) or a JSON number.
  double number(const json& e, const std::string& at) const {
    std::optional<double> x;
    if (e.is_string()) {
      x = parse_float_text(e.get_ref<const std::string&>());
      if (!x) fail(at + " = " + shown(e) + " is not a number (expected hex float such as \"0x1.8p+1\", or nan/-nan/inf/-inf)");
    } else if (e.is_number()) {
      x = e.get<double>();
    } else {
      fail(at + " must be a hex-float string or a number, got " + shown(e));
    }
    return *x;
  }

  // An array of `want` elements, each representable in `dtype` (NaN passes).
  std::vector<double> floats(const json& j, const std::string& field, int64_t want, DType dtype) const {
    if (!j.is_array()) fail(field + " must be an array");
    if (static_cast<int64_t>(j.size()) != want)
      fail(field + " holds " + std::to_string(j.size()) + " elements but the shape needs " + std::to_string(want));
    std::vector<double> t;
    t.reserve(static_cast<std::size_t>(want));  // bounded by the caller's checks
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string at = field + "[" + std::to_string(i) + "]";
      const double x = number(j[i], at);
      if (!std::isnan(x) && round_to(dtype, x) != x)
        fail(at + " = " + shown(j[i]) + " is not representable in " + std::string(dtype_name(dtype)));
      t.push_back(x);
    }
    return t;
  }

  std::vector<double> tensor(const json& problem, const char* key, int64_t want, DType dtype) const {
    return floats(member(problem, "problem.", key), std::string("problem.") + key, want, dtype);
  }

 private:
  const std::string& name_;
};

}  // namespace attncheck
