// The matcher: runs the implementation on the failing case and on problems
// derived from it, and asks each fault model whether it explains the output.
#include "diagnosis/diagnose.h"

#include <cmath>
#include <random>

#include "diagnosis/fault_models.h"
#include "diagnosis/measurements.h"
#include "oracle/oracle.h"

namespace attncheck {

namespace {

struct Derived {
  std::string how;  // "" for the failing case itself
  Problem p;
};

// q and k widened to 16 dims with fixed unit Gaussians, so scale faults that
// coincide at small head_dim (1/d = 1/sqrt(d) = 1 at d = 1) come apart.
Problem wider_head(const Problem& p, int64_t head_dim) {
  const Shape& s = p.shape;
  Problem r = p;
  r.shape.head_dim = head_dim;
  r.q.clear();
  r.k.clear();
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t d = 0; d < head_dim; ++d)
        r.q.push_back(d < s.head_dim ? p.q[p.q_at(bh, i, d)] : round_to(p.dtype, g(rng)));
    for (int64_t j = 0; j < s.kv_len; ++j)
      for (int64_t d = 0; d < head_dim; ++d)
        r.k.push_back(d < s.head_dim ? p.k[p.k_at(bh, j, d)] : round_to(p.dtype, g(rng)));
  }
  return r;
}

// Two batches of two heads, each a differently scaled copy of head 0, so
// stride mix-ups between the axes show.
Problem two_by_two(const Problem& p) {
  const Shape& s = p.shape;
  Problem r = p;
  r.shape.batch = r.shape.heads = 2;
  r.q.clear(); r.k.clear(); r.v.clear(); r.mask.clear();
  for (int t = 0; t < 4; ++t) {
    const double f = 1 + 0.5 * t;
    for (int64_t n = 0; n < s.q_len * s.head_dim; ++n) r.q.push_back(round_to(p.dtype, p.q[n] * f));
    for (int64_t n = 0; n < s.kv_len * s.head_dim; ++n) r.k.push_back(round_to(p.dtype, p.k[n] * (t % 2 ? -1 : 1)));
    for (int64_t n = 0; n < s.kv_len * s.value_dim; ++n) r.v.push_back(round_to(p.dtype, p.v[n] + t));
    if (p.has_mask()) r.mask.insert(r.mask.end(), p.mask.begin(), p.mask.begin() + s.q_len * s.kv_len);
  }
  return r;
}

// Two more query rows and five more keys (fixed unit Gaussians, mask rows and
// columns visible), so causal faults that coincide on tiny shapes come apart.
Problem longer(const Problem& p) {
  const Shape& s = p.shape;
  Problem r = p;
  r.shape.q_len = s.q_len + 2;
  r.shape.kv_len = s.kv_len + 5;
  r.q.clear(); r.k.clear(); r.v.clear(); r.mask.clear();
  std::mt19937_64 rng(11);
  std::normal_distribution<double> g;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    for (int64_t i = 0; i < r.shape.q_len; ++i)
      for (int64_t d = 0; d < s.head_dim; ++d)
        r.q.push_back(i < s.q_len ? p.q[p.q_at(bh, i, d)] : round_to(p.dtype, g(rng)));
    for (int64_t j = 0; j < r.shape.kv_len; ++j) {
      for (int64_t d = 0; d < s.head_dim; ++d)
        r.k.push_back(j < s.kv_len ? p.k[p.k_at(bh, j, d)] : round_to(p.dtype, g(rng)));
      for (int64_t c = 0; c < s.value_dim; ++c)
        r.v.push_back(j < s.kv_len ? p.v[p.v_at(bh, j, c)] : round_to(p.dtype, g(rng)));
    }
    if (p.has_mask())
      for (int64_t i = 0; i < r.shape.q_len; ++i)
        for (int64_t j = 0; j < r.shape.kv_len; ++j)
          r.mask.push_back(i < s.q_len && j < s.kv_len ? p.mask[p.mask_at(bh, i, j)] : 1);
  }
  return r;
}

std::vector<Derived> derived_problems(const Problem& p) {
  std::vector<Derived> d;
  d.push_back({"", p});
  if (!std::isnan(p.scale)) {
    Problem r = p;
    r.scale = NAN;
    d.push_back({"with the default scale", r});
  }
  if (p.shape.head_dim < 16) {
    Problem r = wider_head(p, 16);
    r.scale = NAN;
    d.push_back({"with head_dim 16 and the default scale", r});
  }
  if (p.causal == Causal::none)
    for (Causal c : {Causal::top_left, Causal::bottom_right}) {
      Problem r = p;
      r.causal = c;
      d.push_back({"with causal " + std::string(causal_name(c)), r});
    }
  if (!p.has_mask()) {
    Problem r = p;
    const Shape& s = p.shape;
    r.mask.assign(s.mask_size(), 1);
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i)
        for (int64_t j = 0; j < s.kv_len; ++j) r.mask[r.mask_at(bh, i, j)] = i != 0 && (j % 3 != 1 || s.kv_len == 1);
    d.push_back({"with a mask", r});
  }
  if (p.shape.value_dim != p.shape.head_dim) {
    // Shrinking often ends at value_dim 1, where a scale of 1/sqrt(value_dim)
    // and no scale at all are the same fault; a wider V tells them apart.
    Problem r = p;
    const Shape& s = p.shape;
    r.shape.value_dim = s.value_dim + 3;
    r.v.clear();
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t j = 0; j < s.kv_len; ++j)
        for (int64_t c = 0; c < r.shape.value_dim; ++c)
          r.v.push_back(c < s.value_dim ? p.v[p.v_at(bh, j, c)] : round_to(p.dtype, 0.5 * (j + 1) - c));
    r.scale = NAN;
    d.push_back({"with 3 more value columns and the default scale", r});
  }
  {
    Problem r = p;  // logits hundreds apart
    for (double& x : r.q) x = round_to(p.dtype, x * 64);
    for (double& x : r.k) x = round_to(p.dtype, x * 64);
    d.push_back({"with q and k scaled by 64", r});
  }
  for (Causal c : {p.causal == Causal::none ? Causal::top_left : p.causal, Causal::bottom_right}) {
    Problem r = longer(p);
    r.causal = c;
    d.push_back({"with 2 more queries, 5 more keys and causal " + std::string(causal_name(c)), r});
  }
  if (p.shape.batch == 1 || p.shape.heads == 1) d.push_back({"with 2 batches of 2 heads", two_by_two(p)});
  return d;
}

// Does the prediction explain `out`? Every element the correct oracle says is
// wrong must be judged by the model, and every judged element must agree.
bool explains(const Prediction& m, const std::vector<double>& out, const std::vector<char>& wrong) {
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (std::isinf(m.bound[k])) {
      if (wrong[k]) return false;
      continue;
    }
    if (std::isnan(m.out[k])) {
      if (!std::isnan(out[k])) return false;
      continue;
    }
    if (!(std::abs(out[k] - m.out[k]) <= m.bound[k])) return false;
  }
  return true;
}

}  // namespace

std::string diagnose(Implementation& impl, const Problem& failing) {
  // Per model: on how many derived problems it explains a wrong output, and
  // whether any problem it applies to contradicts it.
  const std::vector<FaultModel>& models = fault_models();
  std::vector<int> explained(models.size(), 0);
  std::vector<char> contradicted(models.size(), 0);
  std::vector<std::string> first_seen(models.size());
  bool failing_ran = false;
  for (const Derived& d : derived_problems(failing)) {
    if (!d.p.inconsistency().empty()) continue;
    const Outcome o = impl.run(d.p);
    if (o.status != CallStatus::ok) continue;
    failing_ran = failing_ran || d.how.empty();
    OracleResult right = oracle(d.p);
    judge_empty_rows_as_zeros(right);  // NaN rows that see nothing are a fault to diagnose too
    const bool correct_here = compare_to_oracle(d.p, right, o.out).ok;
    std::vector<char> wrong(o.out.size(), 0);
    for (std::size_t k = 0; k < o.out.size(); ++k)
      wrong[k] = std::isfinite(right.bound[k]) && !(std::abs(o.out[k] - right.exact[k]) <= right.bound[k]);
    for (std::size_t m = 0; m < models.size(); ++m) {
      if (contradicted[m]) continue;
      const std::optional<Prediction> pr = models[m].predict(d.p);
      // A model that cannot show on this problem predicts correct attention
      // here, so a wrong output contradicts it. Without this, a model that
      // applies only to derived problems (NaN for rows with no visible key,
      // on "with a mask") was named for failures it does not explain.
      if (!pr) {
        if (!correct_here) contradicted[m] = 1;
        continue;
      }
      if (!explains(*pr, o.out, wrong)) { contradicted[m] = 1; continue; }
      if (!correct_here && explained[m]++ == 0) first_seen[m] = d.how;
    }
  }
  if (!failing_ran) return "";
  // The first model in the table's order that explains a wrong output and is
  // never contradicted.
  for (std::size_t m = 0; m < models.size(); ++m) {
    if (contradicted[m] || explained[m] == 0) continue;
    std::string r = "behaves like: " + std::string(models[m].description);
    if (!first_seen[m].empty()) r += " (seen " + first_seen[m] + ")";
    return r;
  }
  // No model explains it: say in numbers what the outputs show.
  return measure(impl, failing);
}

}  // namespace attncheck
