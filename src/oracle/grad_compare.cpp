// compare_grads_to_oracle: dq, dk and dv against the gradient oracle, element
// by element, and the message naming the worst.
#include <cmath>
#include <sstream>

#include "oracle/grad_oracle.h"
#include "problem/number_text.h"

namespace attncheck {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string short_num(double x) {
  std::ostringstream os;
  os.precision(6);
  os << x;
  return os.str();
}

// One tensor, as compare_to_oracle judges out: elements with a finite bound;
// an inf counts as the dtype's largest value of its sign where the allowed
// interval [exact - bound, exact + bound] reaches the overflow threshold on
// that side (as compare_lse_to_oracle: a gradient's bound may be wider than
// its value, and a correct result then rounds to either inf). Missing gradients (a wrong size) count as
// every judged element wrong.
Comparison compare_one(const Problem& p, const std::vector<double>& exact, const std::vector<double>& bound,
                       const std::vector<double>& got) {
  Comparison c;
  const double top = max_finite(p.dtype), u = unit_roundoff(p.dtype);
  const double overflow = top + u * top / (2 - 2 * u);
  const bool sized = got.size() == exact.size();
  for (std::size_t k = 0; k < exact.size(); ++k) {
    if (std::isinf(bound[k])) continue;
    ++c.judged;
    double ratio = kInf;
    if (sized) {
      double x = got[k];
      if (std::isinf(x) && (x > 0 ? exact[k] + bound[k] >= overflow : exact[k] - bound[k] <= -overflow))
        x = std::copysign(top, x);
      const double err = std::abs(x - exact[k]);
      if (std::isnan(err)) ratio = kInf;
      else if (bound[k] > 0) ratio = err / bound[k];
      else ratio = err > 0 ? kInf : 0;
    }
    if (ratio > 1) { c.ok = false; ++c.violations; }
    if (ratio > c.worst_ratio || c.worst_index < 0) { c.worst_ratio = ratio; c.worst_index = static_cast<int64_t>(k); }
  }
  return c;
}

std::string element(const char* name, const char* head, const char* row, const char* col, int64_t flat,
                    int64_t heads, int64_t rows, int64_t cols) {
  const int64_t c = flat % cols, r = (flat / cols) % rows, h = (flat / (cols * rows)) % heads,
                b = flat / (cols * rows * heads);
  std::ostringstream os;
  os << name << "[b=" << b << "][" << head << "=" << h << "][" << row << "=" << r << "][" << col << "=" << c << "]";
  return os.str();
}

}  // namespace

std::string dq_element(const Problem& p, int64_t flat) {
  return element("dq", "h", "i", "d", flat, p.shape.heads, p.shape.q_len, p.shape.head_dim);
}
std::string dk_element(const Problem& p, int64_t flat) {
  return element("dk", "kv_head", "j", "d", flat, p.shape.kv_head_count(), p.shape.kv_len, p.shape.head_dim);
}
std::string dv_element(const Problem& p, int64_t flat) {
  return element("dv", "kv_head", "j", "c", flat, p.shape.kv_head_count(), p.shape.kv_len, p.shape.value_dim);
}

GradComparison compare_grads_to_oracle(const Problem& p, const GradOracleResult& g, const Outcome& got) {
  GradComparison r;
  r.dtype = p.dtype;
  r.dq = compare_one(p, g.dq, g.dq_bound, got.dq);
  r.dk = compare_one(p, g.dk, g.dk_bound, got.dk);
  r.dv = compare_one(p, g.dv, g.dv_bound, got.dv);
  struct Tensor {
    const Comparison& c;
    const std::vector<double> &exact, &bound, &got;
    std::string (*name)(const Problem&, int64_t);
  };
  const Tensor tensors[] = {{r.dq, g.dq, g.dq_bound, got.dq, dq_element},
                            {r.dk, g.dk, g.dk_bound, got.dk, dk_element},
                            {r.dv, g.dv, g.dv_bound, got.dv, dv_element}};
  bool first = true;
  for (const Tensor& t : tensors) {
    if (t.c.worst_index < 0 || (!first && !(t.c.worst_ratio > r.worst_ratio))) continue;
    first = false;
    const int64_t k = t.c.worst_index;
    r.worst_element = t.name(p, k);
    r.worst_got = t.got.size() == t.exact.size() ? t.got[k] : std::numeric_limits<double>::quiet_NaN();
    r.worst_exact = t.exact[k];
    r.worst_bound = t.bound[k];
    r.worst_ratio = t.c.worst_ratio;
  }
  return r;
}

std::string GradComparison::message() const {
  if (ok()) return "";
  const PairText text = pair_text(worst_got, worst_exact, dtype);
  std::ostringstream os;
  os << violations() << " gradient element(s) outside the bound (dq " << dq.violations << ", dk " << dk.violations
     << ", dv " << dv.violations << "); worst " << worst_element << " = "
     << text.a << " but exact " << text.b;
  if (const std::string d = difference_text(worst_got, worst_exact, dtype); !d.empty()) os << ": " << d;
  os << " (bound " << short_num(worst_bound) << ", " << short_num(worst_ratio)
     << "x over)";
  return os.str();
}

}  // namespace attncheck
