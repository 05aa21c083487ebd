#include "run/law_result_wire.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "problem/problem_fields.h"

namespace attncheck {

namespace {

class Writer {
 public:
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void text(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    bytes_.append(s);
  }
  template <class T>
  void list(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    pod(static_cast<uint64_t>(v.size()));
    if (!v.empty()) bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  // Every field of the problem's list (problem/problem_fields.h), in its
  // order, so that a worker's counterexample (its case file, its
  // reproduction) is the problem it failed.
  void problem(const std::optional<Problem>& p) {
    pod(static_cast<uint8_t>(p.has_value()));
    if (!p) return;
    for_each_field<Problem>([this](const auto&, const auto& member) { value(member); }, *p);
  }
  template <class T>
  void value(const T& x) {
    if constexpr (is_vector<T>) list(x);
    else pod(x);
  }
  void calls(const std::vector<LawCall>& cs) {
    pod(static_cast<uint64_t>(cs.size()));
    for (const LawCall& c : cs) {
      text(c.role);
      text(c.derivation);
      problem(c.problem);
      pod(c.replays);
    }
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}
  template <class T>
  bool pod(T& v) {
    if (rest_.size() < sizeof v) return false;
    std::memcpy(&v, rest_.data(), sizeof v);
    rest_.remove_prefix(sizeof v);
    return true;
  }
  bool text(std::string& s) {
    uint64_t n = 0;
    if (!pod(n) || n > rest_.size()) return false;
    s.assign(rest_.data(), n);
    rest_.remove_prefix(n);
    return true;
  }
  template <class T>
  bool list(std::vector<T>& v) {
    uint64_t n = 0;
    if (!pod(n) || n > rest_.size() / sizeof(T)) return false;
    v.resize(n);
    if (n) std::memcpy(v.data(), rest_.data(), n * sizeof(T));
    rest_.remove_prefix(n * sizeof(T));
    return true;
  }
  bool problem(std::optional<Problem>& p) {
    uint8_t has = 0;
    if (!pod(has) || has > 1) return false;
    if (!has) {
      p.reset();
      return true;
    }
    p.emplace();
    bool ok = true;
    for_each_field<Problem>([&](const auto&, auto& member) { ok = ok && value(member); }, *p);
    return ok;
  }
  template <class T>
  bool value(T& x) {
    if constexpr (is_vector<T>) return list(x);
    else return pod(x);
  }
  bool calls(std::vector<LawCall>& cs) {
    uint64_t n = 0;
    if (!pod(n) || n > rest_.size()) return false;  // each call takes more than a byte
    cs.assign(n, LawCall{});
    for (LawCall& c : cs) {
      std::optional<Problem> p;
      if (!text(c.role) || !text(c.derivation) || !problem(p) || !p || !pod(c.replays)) return false;
      c.problem = std::move(*p);
    }
    return true;
  }
  bool at_end() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

}  // namespace

// The fields in declaration order of LawReport, then LawResult's own. The
// reporting fields set in the parent (case_file, reproduce, found_while) are
// carried too, so that the round trip is the identity.
std::string encode_law_result(const LawResult& l) {
  Writer w;
  const LawReport& r = l.run;
  w.text(r.law);
  w.pod(r.status);
  w.pod(r.cases);
  w.pod(r.judged);
  w.pod(r.largest);
  w.list(r.dtypes);
  w.pod(r.features);
  w.text(r.message);
  w.pod(r.skip_reason);
  w.problem(r.counterexample);
  w.calls(r.failing_calls);
  w.text(r.diagnosis);
  w.pod(r.shrink_steps);
  w.problem(r.fault_case);
  w.text(r.fault_message);
  w.pod(r.fault_status);
  w.pod(r.faults);
  w.pod(r.answered_features);
  w.pod(r.refused_features);
  w.pod(r.answered_formats);
  w.pod(r.refused_formats);
  w.list(r.accuracy);
  w.text(l.case_file);
  w.text(l.reproduce);
  w.text(l.found_while);
  w.pod(l.seconds);
  return w.take();
}

bool decode_law_result(std::string_view bytes, LawResult& l) {
  Reader in(bytes);
  LawReport& r = l.run;
  return in.text(r.law) && in.pod(r.status) && in.pod(r.cases) && in.pod(r.judged) && in.pod(r.largest) &&
         in.list(r.dtypes) && in.pod(r.features) && in.text(r.message) && in.pod(r.skip_reason) && in.problem(r.counterexample) &&
         in.calls(r.failing_calls) && in.text(r.diagnosis) && in.pod(r.shrink_steps) && in.problem(r.fault_case) && in.text(r.fault_message) &&
         in.pod(r.fault_status) && in.pod(r.faults) && in.pod(r.answered_features) &&
         in.pod(r.refused_features) && in.pod(r.answered_formats) && in.pod(r.refused_formats) && in.list(r.accuracy) && in.text(l.case_file) && in.text(l.reproduce) &&
         in.text(l.found_while) && in.pod(l.seconds) && in.at_end();
}

}  // namespace attncheck
