// grad_consistent_with_forward: the gradients are the derivative of the
// implementation's OWN forward. Along a direction (dir_q, dir_k, dir_v) drawn
// from the problem's hash, the central difference of f(x) = sum(out(x) * dout)
// agrees with <dq, dir_q> + <dk, dir_k> + <dv, dir_v>, as
// torch.autograd.gradcheck checks, but against the plugin's forward, so a
// backward consistent with a wrong forward passes here (matches_oracle sees
// the forward) and a backward that differs from its own forward fails even
// where no oracle bound is tight. In f64: the problem is promoted (its values
// are exact in f64; an implementation without f64 answers unsupported).
//
// Step and tolerance. Directions have the size of the tensor they move (each
// element uniform in [-1, 1] times the mean |x| of its live elements, 1 when
// those are 0), zero on padding. With x(t) = fl(x + t dir) and the realised
// step D_t = x(t) - x(-t) (exact in long double), two central differences
//   c_t = f(x(t)) - f(x(-t)),   g_t = <grad, D_t>      at t = h and h / 2,
// h = 2^-12, halved until no logit moves by more than 2^-10 nats (a
// step far inside the weights' linear range), combine by Richardson: R = (4 c_{h/2} - c_h / 2) / 3 against
// G = (4 g_{h/2} - g_h / 2) / 3. With e = f' - <grad, dir>,
// c_t - g_t = 2 t e + t^3 f''' / 3 + O(t^5), so R - G = h e + O(h^5): the t^3
// terms cancel, and a gradient error shows as h e. What a correct
// implementation may leave there:
//   - truncation: T = |(c_h - g_h) - 2 (c_{h/2} - g_{h/2})| = h^3 |f'''| / 4
//     (e cancels in it, so a wrong gradient does not widen it), taken whole
//     as the size of the O(h^5) residual (generous: it assumes h^2 f^(5) is
//     no larger than f''');
//   - the forward's rounding at the four points: |f^ - f| <= sum |dout| bound
//     (the forward oracle's bound at each perturbed problem), times 4/3 and 1/6;
//   - the gradients' own rounding: sum over elements of |D_R| times the bound
//     of grad_rounding_bounds (full model), D_R = (4 D_{h/2} - D_h / 2) / 3.
// A row outside the forward's domain at any point leaves the case unjudged.
// The function is smooth at every point attncheck draws (visibility does not
// depend on the values; a -inf bias hides its key at every point; a soft-cap
// is tanh), so no case is excluded for smoothness.
//
// Catches: a backward that is not the derivative of the forward it ships
// with: a missing rowsum term, dq without the scale, dv from unnormalised
// weights, the soft-cap derivative left out, a GQA group's gradients from one
// head, a backward that assumes another scale, mask or causal rule than the
// forward applies.
// Cannot catch: faults invisible along the drawn direction (one direction per
// case: a fault in one element shows with probability ~1), faults of both
// forward and backward that agree with each other, gradients wrong below the
// tolerance.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "law_framework/grad_support.h"
#include "oracle/oracle.h"
#include "problem/transforms.h"
#include "problem/number_text.h"

namespace attncheck {

namespace {

constexpr double kStep = 0x1p-12;
// The largest change of a logit the step may cause (nats): far below one, so
// that the weights move along their tangent and Richardson's step has the
// leading error terms it assumes.
constexpr double kMaxLogitStep = 0x1p-10;

struct Direction {
  std::vector<double> q, k, v;  // q's, k's, v's shapes; 0 on padding
};

// Uniform in [-1, 1) from a counter-based hash.
double unit_draw(uint64_t salt, uint64_t k) {
  uint64_t z = salt + 0x9E3779B97F4A7C15ull * (k + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1p-52 - 1.0;
}

Direction draw_direction(const Problem& p, uint64_t salt) {
  const Shape& s = p.shape;
  Direction dir;
  dir.q.assign(s.q_size(), 0.0);
  dir.k.assign(s.k_size(), 0.0);
  dir.v.assign(s.v_size(), 0.0);
  auto fill = [&](std::vector<double>& d, const std::vector<double>& x, auto live, uint64_t tag) {
    long double sum = 0;  // long double: a sum of huge doubles does not overflow
    int64_t n = 0;
    for (std::size_t e = 0; e < x.size(); ++e)
      if (live(static_cast<int64_t>(e)) && std::isfinite(x[e])) { sum += std::abs(x[e]); ++n; }
    const double size = n > 0 && sum > 0 ? static_cast<double>(sum / n) : 1.0;
    for (std::size_t e = 0; e < x.size(); ++e)
      if (live(static_cast<int64_t>(e))) d[e] = size * unit_draw(salt ^ tag, e);
  };
  const int64_t kvh = s.kv_head_count();
  fill(dir.q, p.q, [&](int64_t e) { return p.row_exists(e / (s.q_len * s.head_dim), (e / s.head_dim) % s.q_len); }, 1);
  auto key_live = [&](int64_t e, int64_t cols) {
    const int64_t j = (e / cols) % s.kv_len, kv = e / (cols * s.kv_len);
    return j < p.kv_len_of(kv / kvh);
  };
  fill(dir.k, p.k, [&](int64_t e) { return key_live(e, s.head_dim); }, 2);
  fill(dir.v, p.v, [&](int64_t e) { return key_live(e, s.value_dim); }, 3);
  return dir;
}

// The step: kStep, halved until no logit moves by more than kMaxLogitStep
// (|scale| (|dir_q_i| . |k_j| + |q_i| . |dir_k_j|) h over visible keys).
double step_for(const Problem& p, const Direction& dir) {
  const Shape& s = p.shape;
  double rate = 0;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t j = 0; j < s.kv_len; ++j) {
        if (!p.visible(bh, i, j)) continue;
        double r = 0;
        for (int64_t d = 0; d < s.head_dim; ++d) {
          const int64_t qi = p.q_at(bh, i, d), kj = p.k_at(p.kv_of(bh), j, d);
          r += std::abs(dir.q[qi] * p.k[kj]) + std::abs(p.q[qi] * dir.k[kj]);
        }
        rate = std::max(rate, std::abs(p.effective_scale()) * r);
      }
  double h = kStep;
  while (h * rate > kMaxLogitStep && h > 0x1p-60) h /= 2;
  return h;
}

// The forward problem at x + t dir (rounded to f64), and the realised offsets.
Problem moved(const Problem& p, const Direction& dir, double t) {
  Problem r = p;
  r.dout.clear();
  r.layouts.dout = r.layouts.dq = r.layouts.dk = r.layouts.dv = TensorLayout{};
  for (std::size_t e = 0; e < r.q.size(); ++e) r.q[e] += t * dir.q[e];
  for (std::size_t e = 0; e < r.k.size(); ++e) r.k[e] += t * dir.k[e];
  for (std::size_t e = 0; e < r.v.size(); ++e) r.v[e] += t * dir.v[e];
  return r;
}

// f = sum over existing rows of out * dout, and its rounding bound from the
// forward oracle (+inf when a row with nonzero dout is unjudged).
struct Objective {
  long double f = 0;
  double error = 0;
};

std::optional<Verdict> objective(Implementation& impl, const Problem& at, const std::vector<double>& dout,
                                 Objective& obj) {
  std::vector<double> out;
  if (auto bad = run_for(impl, at, out)) return bad;
  const OracleResult o = oracle(at);
  const Shape& s = at.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (!at.row_exists(bh, i) || !at.row_sees_any_key(bh, i)) continue;
      for (int64_t c = 0; c < s.value_dim; ++c) {
        const int64_t e = at.out_at(bh, i, c);
        obj.f += static_cast<long double>(out[e]) * dout[e];
        obj.error += std::abs(dout[e]) * o.bound[e] + 0x1p-60 * std::abs(out[e] * dout[e]);
      }
    }
  if (!std::isfinite(static_cast<double>(obj.f))) obj.error = INFINITY;
  return std::nullopt;
}

}  // namespace

Law law_grad_consistent_with_forward() {
  Law law;
  law.name = "grad_consistent_with_forward";
  law.statement = "central differences of the implementation's own forward (f64) agree with its gradients along a random direction";
  law.features = kEveryFeature;
  law.required = kBackwardFeature;
  law.cheap = false;  // a backward and four forward calls
  law.check = [](Implementation& impl, const Problem& drawn) {
    const Problem given = backward_of(drawn);
    if (!given.is_backward()) return Verdict::not_applicable("a forward problem (no dout): the law is about gradients");
    Problem p = given;
    p.dtype = DType::f64;  // every f32/f16/bf16 value is exact in f64
    GradRun run;
    if (auto bad = run_backward_bounded(impl, p, run)) return *bad;
    const Direction dir = draw_direction(p, problem_fingerprint(p));
    // Forward values at x +- h dir and x +- h/2 dir.
    const double h = step_for(p, dir);
    if (!std::isfinite(h) || h <= 0x1p-60)
      return Verdict::not_applicable("the logits are too sensitive for a finite difference in f64");
    const double steps[2] = {h, h / 2};
    Objective plus[2], minus[2];
    Problem at_plus[2], at_minus[2];
    for (int t = 0; t < 2; ++t) {
      at_plus[t] = moved(p, dir, steps[t]);
      at_minus[t] = moved(p, dir, -steps[t]);
      if (auto bad = objective(impl, at_plus[t], p.dout, plus[t])) return *bad;
      if (auto bad = objective(impl, at_minus[t], p.dout, minus[t])) return *bad;
    }
    // <grad, D_t> over live elements, and the gradients' rounding along D_R.
    const Outcome& o = run.outcome;
    long double g[2] = {0, 0};
    double grad_error = 0;
    bool judged = true, finite_steps = true;
    auto along = [&](const std::vector<double>& grad, const std::vector<double>& bound, auto member) {
      for (std::size_t e = 0; e < grad.size(); ++e) {
        long double d[2];
        for (int t = 0; t < 2; ++t)
          d[t] = static_cast<long double>((at_plus[t].*member)[e]) - static_cast<long double>((at_minus[t].*member)[e]);
        if (d[0] == 0 && d[1] == 0) continue;
        if (!std::isfinite(static_cast<double>(d[0])) || !std::isfinite(static_cast<double>(d[1]))) {
          finite_steps = false;
          continue;
        }
        if (!std::isfinite(bound[e])) { judged = false; continue; }
        for (int t = 0; t < 2; ++t) g[t] += d[t] * grad[e];
        grad_error += bound[e] * static_cast<double>(std::abs((4 * d[1] - d[0] / 2) / 3));
      }
    };
    along(o.dq, run.bounds.dq, &Problem::q);
    along(o.dk, run.bounds.dk, &Problem::k);
    along(o.dv, run.bounds.dv, &Problem::v);
    double forward_error = 0;
    for (int t = 0; t < 2; ++t) forward_error += (t == 1 ? 4.0 / 3 : 1.0 / 6) * (plus[t].error + minus[t].error);
    if (!finite_steps) return Verdict::not_applicable("a step leaves the finite range of f64");
    if (!judged || !std::isfinite(forward_error))
      return Verdict::not_applicable("a row outside the domain (or an unjudged gradient) at the point or near it");
    const long double c[2] = {plus[0].f - minus[0].f, plus[1].f - minus[1].f};
    const long double R = (4 * c[1] - c[0] / 2) / 3, G = (4 * g[1] - g[0] / 2) / 3;
    // The t^3 terms: c_t - g_t = e t + k t^3; (c_h - g_h) - 2 (c_{h/2} - g_{h/2}) = k h^3 (1 - 1/4) cancels e.
    const double truncation = static_cast<double>(std::abs((c[0] - g[0]) - 2 * (c[1] - g[1])));
    const double allowed = kBoundSafetyFactor * (truncation + forward_error + grad_error);
    const double diff = static_cast<double>(std::abs(R - G));
    if (diff <= allowed) return Verdict::pass();
    // Both are estimates from the implementation's outputs: digits that tell them apart.
    const PairText text = pair_text(static_cast<double>(R), static_cast<double>(G));
    std::ostringstream m;
    m << "along a random direction (steps " << num(h) << " and " << num(h / 2)
      << " of the tensors' sizes) the forward's central difference is " << text.a
      << " but the gradients give " << text.b << "; allowed difference " << num(allowed)
      << " (truncation " << num(truncation) << ", forward rounding " << num(forward_error)
      << ", gradient rounding " << num(grad_error) << ")";
    return Verdict::fail(m.str());
  };
  return law;
}

}  // namespace attncheck
