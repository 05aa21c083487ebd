#include "run/shape_probe.h"

#include <algorithm>
#include <numeric>

namespace attncheck {
namespace {

// Head dims from the tiniest through odd ones to those kernels specialise for.
constexpr int64_t kHeadDimCandidates[] = {1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 31, 32, 33, 40, 48,
                                          64, 80, 96, 100, 112, 128, 160, 192, 256};
constexpr int64_t kLengthCandidates[] = {1, 2, 3, 5, 8, 16, 17, 32, 64};

// A well-conditioned call q [1][1][q_len][d], k [1][1][kv_len][d], v [1][1][kv_len][dv]
// of values -1, 0, 1; no causal rule, no mask, the default scale.
Problem probe_problem(DType dtype, int64_t q_len, int64_t kv_len, int64_t d, int64_t dv) {
  Shape s;
  s.q_len = q_len, s.kv_len = kv_len, s.head_dim = d, s.value_dim = dv;
  Problem p = make_problem(dtype, s);
  for (std::size_t i = 0; i < p.q.size(); ++i) p.q[i] = static_cast<double>(i % 3) - 1;
  for (std::size_t i = 0; i < p.k.size(); ++i) p.k[i] = static_cast<double>((i + 1) % 3) - 1;
  for (std::size_t i = 0; i < p.v.size(); ++i) p.v[i] = static_cast<double>((i + 2) % 3) - 1;
  return p;
}


// The largest m > 1 such that the accepted lengths are exactly the candidate
// multiples of m; 1 when there is none (every length, or no pattern).
int64_t multiple_of(const std::vector<int64_t>& accepted) {
  if (accepted.empty() || accepted.size() == std::size(kLengthCandidates)) return 1;
  int64_t m = 0;
  for (int64_t n : accepted) m = std::gcd(m, n);
  if (m <= 1) return 1;
  for (int64_t n : kLengthCandidates)
    if ((n % m == 0) != (std::find(accepted.begin(), accepted.end(), n) != accepted.end())) return 1;
  return m;
}

}  // namespace

bool ShapeFindings::restricts() const {
  return !head_dims.empty() || q_len_one_only || same_dims || q_len_multiple > 1 || kv_len_multiple > 1;
}

std::string ShapeFindings::describe() const {
  std::string s;
  auto add = [&s](const std::string& part) { s += (s.empty() ? "" : "; ") + part; };
  if (!head_dims.empty()) {
    std::string list;
    for (int64_t d : head_dims) list += (list.empty() ? "" : ", ") + std::to_string(d);
    add("head_dim in {" + list + "}");
  }
  if (same_dims) add("value_dim = head_dim");
  if (q_len_one_only) add("q_len 1 only");
  if (q_len_multiple > 1) add("q_len a multiple of " + std::to_string(q_len_multiple));
  if (kv_len_multiple > 1) add("kv_len a multiple of " + std::to_string(kv_len_multiple));
  return s;
}

ShapeFindings probe_shapes(Implementation& impl, DType dtype) {
  ShapeFindings f;
  // After a process fault every further candidate counts as accepted: nothing
  // is restricted on the strength of calls that were never answered.
  auto accepts = [&](Implementation& i, const Problem& p) {
    if (f.fault_case) return true;
    const Outcome o = i.run(p);
    if (is_process_fault(o.status)) {
      f.fault_case = p;
      f.fault_status = o.status;
      f.fault_message = std::string(call_status_name(o.status)) + ": " + o.message;
      return true;
    }
    return o.status != CallStatus::unsupported;
  };
  // A first accepted call: the lengths and head dim the other probes vary from.
  int64_t q0 = 0, kv0 = 0, d0 = 0;
  for (int64_t kv : {4, 16, 64, 128})
    for (int64_t q : {4, 1, 16})
      for (int64_t d : kHeadDimCandidates)
        if (!d0 && accepts(impl, probe_problem(dtype, q, std::max(q, kv), d, d))) {
          q0 = q, kv0 = std::max(q, kv), d0 = d;
        }
  if (!d0) return f;
  f.any_accepted = true;

  std::vector<int64_t> dims;
  for (int64_t d : kHeadDimCandidates)
    if (accepts(impl, probe_problem(dtype, q0, kv0, d, d))) dims.push_back(d);
  if (dims.size() < std::size(kHeadDimCandidates)) f.head_dims = dims;

  const int64_t dv = d0 > 1 ? d0 / 2 : 2;
  f.same_dims = !accepts(impl, probe_problem(dtype, q0, kv0, d0, dv));

  std::vector<int64_t> qs, kvs;
  for (int64_t n : kLengthCandidates) {
    if (accepts(impl, probe_problem(dtype, n, std::max(n, kv0), d0, d0))) qs.push_back(n);
    if (accepts(impl, probe_problem(dtype, q0, n, d0, d0))) kvs.push_back(n);
  }
  f.q_len_one_only = qs.size() == 1 && qs.front() == 1;
  if (!f.q_len_one_only) f.q_len_multiple = multiple_of(qs);
  f.kv_len_multiple = multiple_of(kvs);
  if (f.fault_case) {  // what was learned before the fault may be partial: keep only the fault
    ShapeFindings faulted;
    faulted.any_accepted = true;
    faulted.fault_case = f.fault_case;
    faulted.fault_status = f.fault_status;
    faulted.fault_message = f.fault_message;
    return faulted;
  }
  return f;
}

void restrict_to(GenOptions& g, const ShapeFindings& f) {
  if (!f.head_dims.empty()) {
    // Within what was asked (--head-dim), when any of it is accepted.
    std::vector<int64_t> both;
    for (int64_t d : g.head_dims)
      if (std::find(f.head_dims.begin(), f.head_dims.end(), d) != f.head_dims.end()) both.push_back(d);
    g.head_dims = both.empty() ? f.head_dims : both;
    g.max_head_dim = std::max(g.max_head_dim, f.head_dims.back());
  }
  if (f.same_dims) g.same_dims = true;
  if (f.q_len_one_only) g.min_q_len = g.max_q_len = 1;
  g.q_len_multiple = f.q_len_multiple;
  g.kv_len_multiple = f.kv_len_multiple;
}

}  // namespace attncheck
