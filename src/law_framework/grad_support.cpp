#include "law_framework/grad_support.h"

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "gen/gen_random.h"
#include "problem/transforms.h"
#include "problem/number_text.h"

namespace attncheck {

const char* grad_tensor_name(GradTensor t) {
  switch (t) {
    case GradTensor::dq: return "dq";
    case GradTensor::dk: return "dk";
    case GradTensor::dv: return "dv";
  }
  return "?";
}

const std::vector<double>& grad_of(const Outcome& o, GradTensor t) {
  return t == GradTensor::dq ? o.dq : t == GradTensor::dk ? o.dk : o.dv;
}
std::vector<double>& grad_of(Outcome& o, GradTensor t) {
  return t == GradTensor::dq ? o.dq : t == GradTensor::dk ? o.dk : o.dv;
}
const std::vector<double>& bound_of(const GradBounds& b, GradTensor t) {
  return t == GradTensor::dq ? b.dq : t == GradTensor::dk ? b.dk : b.dv;
}

std::string grad_element(const Problem& p, GradTensor t, int64_t flat) {
  const Shape& s = p.shape;
  const int64_t cols = t == GradTensor::dv ? s.value_dim : s.head_dim;
  const int64_t len = t == GradTensor::dq ? s.q_len : s.kv_len;
  const int64_t heads = t == GradTensor::dq ? s.heads : s.kv_head_count();
  const int64_t c = flat % cols, r = (flat / cols) % len, h = (flat / (cols * len)) % heads,
                b = flat / (cols * len * heads);
  std::ostringstream os;
  os << grad_tensor_name(t) << "[b=" << b << "][" << (t == GradTensor::dq ? "h=" : "kvh=") << h << "]["
     << (t == GradTensor::dq ? "i=" : "j=") << r << "][" << (t == GradTensor::dv ? "c=" : "d=") << c << "]";
  return os.str();
}

Problem backward_of(const Problem& p) {
  if (p.is_backward()) return p;
  Problem r = p;
  const Shape& s = p.shape;
  r.dout.assign(s.out_size(), std::numeric_limits<double>::quiet_NaN());
  gen::Rng rng(problem_fingerprint(p) ^ 0xd0d0ull);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < p.q_len_of(bh / s.heads); ++i)
      for (int64_t c = 0; c < s.value_dim; ++c) r.dout[p.out_at(bh, i, c)] = round_to(p.dtype, gen::gaussian(rng));
  return r;
}

std::optional<Verdict> run_backward(Implementation& impl, const Problem& p, Outcome& o) {
  if (!p.is_backward()) return Verdict::not_applicable("a forward problem (no dout): the law is about gradients");
  o = impl.run(p);
  if (auto bad = unusable(o)) return bad;
  const Shape& s = p.shape;
  if (static_cast<int64_t>(o.dq.size()) != s.q_size() || static_cast<int64_t>(o.dk.size()) != s.k_size() ||
      static_cast<int64_t>(o.dv.size()) != s.v_size())
    return Verdict::fail("the backward call returned no gradients of the problem's shapes");
  return std::nullopt;
}

std::optional<Verdict> run_backward_bounded(Implementation& impl, const Problem& p, GradRun& run,
                                            GradErrorModel model) {
  if (auto bad = run_backward(impl, p, run.outcome)) return bad;
  run.magnitudes = grad_magnitudes(p, run.outcome.out);
  run.bounds = grad_rounding_bounds(p, run.magnitudes, run.outcome, model);
  return std::nullopt;
}

std::optional<std::string> grad_mismatch(const Problem& p, const Outcome& a, const GradBounds& tol_a, const Outcome& b,
                                         const GradBounds& tol_b, const char* name_a, const char* name_b,
                                         int64_t& judged) {
  double worst = 0;
  int64_t at = -1, count = 0;
  GradTensor worst_t = GradTensor::dq;
  for (GradTensor t : {GradTensor::dq, GradTensor::dk, GradTensor::dv}) {
    const std::vector<double>&ga = grad_of(a, t), &gb = grad_of(b, t), &ta = bound_of(tol_a, t),
                                  &tb = bound_of(tol_b, t);
    for (std::size_t k = 0; k < ga.size() && k < gb.size(); ++k) {
      const double tol = ta[k] + tb[k];
      if (std::isinf(tol) || std::isnan(tol)) continue;
      ++judged;
      if (ga[k] == gb[k]) continue;
      const double d = std::abs(ga[k] - gb[k]);
      const double ratio = std::isnan(d) ? INFINITY : (tol > 0 ? d / tol : INFINITY);
      if (ratio > 1) {
        ++count;
        if (at < 0 || ratio > worst) { worst = ratio; at = static_cast<int64_t>(k); worst_t = t; }
      }
    }
  }
  if (at < 0) return std::nullopt;
  const double x = grad_of(a, worst_t)[at], y = grad_of(b, worst_t)[at];
  std::ostringstream os;
  os << count << " gradient element(s) differ; worst " << grad_element(p, worst_t, at) << ": "
     << compared_values(std::string(name_a) + " =", x, std::string(name_b) + " =", y, p.dtype,
                        bound_of(tol_a, worst_t)[at] + bound_of(tol_b, worst_t)[at]);
  return os.str();
}

Verdict equivalent_backward_calls(Implementation& impl, const Problem& a, const Problem& b, const char* name_a,
                                  const char* name_b) {
  GradRun ra, rb;
  if (auto bad = run_backward_bounded(impl, a, ra)) return *bad;
  if (auto bad = run_backward_bounded(impl, b, rb)) return *bad;
  int64_t judged = 0;
  if (auto m = grad_mismatch(a, ra.outcome, ra.bounds, rb.outcome, rb.bounds, name_a, name_b, judged))
    return Verdict::fail(*m).on({{name_a, "", a}, {name_b, "", b}});  // derivations: law_calls.h
  if (judged == 0) return Verdict::not_applicable("no gradient element of the call is judged");
  return Verdict::pass();
}

}  // namespace attncheck
