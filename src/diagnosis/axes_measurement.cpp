// The axes a failure depends on: the failing case rerun in every other dtype
// the implementation offers, without its causal rule, without its mask, and
// a family of Gaussian problems like it at head_dim 16, 64, 128 and its own.
// "Present" is the implementation wrong against the oracle there; an axis is
// named when the failure is absent somewhere along it. A dtype counts as
// absent only where its bound could have seen the failure: the failing case's
// own error exceeds that dtype's bound somewhere (an error of 1e-9 breaks
// f64's bound and no other, so "right in f32" would say nothing about the
// fault, only about f32's tolerance).
#include <algorithm>
#include <cmath>
#include <random>

#include "diagnosis/measurement_steps.h"

namespace attncheck {

namespace {

enum class Seen { present, absent, unknown };

Seen seen(Implementation& impl, const Problem& p, ProbeBudget& budget) {
  const std::optional<ProbeRun> r = budget.run(impl, p);
  if (!r || r->judged == 0) return Seen::unknown;
  return r->correct ? Seen::absent : Seen::present;
}

std::string joined(const std::vector<std::string>& names) {
  std::string r;
  for (const std::string& n : names) r += (r.empty() ? "" : ", ") + n;
  return r;
}

// "wrong only in f16 (right in f32, f64)": named values where it is present and absent.
std::optional<std::string> axis_phrase(const std::string& where, const std::vector<std::string>& present,
                                       const std::vector<std::string>& absent, const std::string& right_where) {
  if (present.empty() || absent.empty()) return std::nullopt;
  return "wrong only " + where + joined(present) + " (right " + right_where + joined(absent) + ")";
}

// Problem like `failing` (dtype, shape, causal rule, mask, scale, V) with q and
// k [.., head_dim] drawn N(0, 1) and q scaled so the largest |logit| is that
// of the failing case (at least 2, so logits have some size).
Problem like_at_head_dim(const Problem& failing, int64_t head_dim) {
  Problem p = failing;
  p.shape.head_dim = head_dim;
  std::mt19937_64 rng(0xd1a9 + head_dim);
  std::normal_distribution<double> g;
  p.q.assign(p.shape.q_size(), 0);
  p.k.assign(p.shape.k_size(), 0);
  for (double& x : p.q) x = g(rng);
  for (double& x : p.k) x = g(rng);
  round_tensors(p);
  const double now = largest_logit(p), want = std::max(largest_logit(failing), 2.0);
  if (now > 0)
    for (double& x : p.q) x = round_to(p.dtype, x * want / now);
  return p;
}

// Could `in_t` (the failing case rerun in another dtype, same shape) see the
// failure `failing` shows? Some element wrong in the failing run has an error
// (|out - exact|, out [b][h][q_len][value_dim]) larger than in_t's bound there.
// A NaN or infinite output is no such measure: whether a case overflows
// depends on the dtype's range, so the same fault may give a finite wrong
// output, or a right one, in a wider dtype.
bool resolves(const ProbeRun& failing, const ProbeRun& in_t) {
  for (std::size_t k = 0; k < failing.out.size() && k < in_t.right.bound.size(); ++k) {
    if (!std::isfinite(failing.out[k])) continue;
    const double err = std::abs(failing.out[k] - failing.right.exact[k]);
    const bool wrong = std::isfinite(failing.right.bound[k]) && !(err <= failing.right.bound[k]);
    if (wrong && std::isfinite(in_t.right.bound[k]) && !(err <= in_t.right.bound[k])) return true;
  }
  return false;
}

bool all_finite(const Problem& p) {
  for (const auto* t : {&p.q, &p.k, &p.v})
    for (double x : *t)
      if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

std::vector<std::string> measure_axes(Implementation& impl, const Problem& failing, ProbeBudget& budget) {
  // Only a failure the failing case itself shows can be followed along axes.
  const std::optional<ProbeRun> own = budget.run(impl, failing);
  if (!own || own->judged == 0 || own->correct) return {};
  std::vector<std::string> said;
  const auto note = [&said](std::optional<std::string> s) {
    if (s) said.push_back(std::move(*s));
  };

  {
    std::vector<std::string> present, absent;  // in ABI order, the failing dtype among them
    for (DType t : every_dtype()) {
      if (t == failing.dtype) {
        present.push_back(std::string(dtype_name(t)));
        continue;
      }
      Problem p = failing;
      p.dtype = t;
      round_tensors(p);
      if (!all_finite(p)) continue;  // the case does not fit in t
      const std::optional<ProbeRun> r = budget.run(impl, p);
      if (!r || r->judged == 0) continue;
      if (!r->correct)
        present.push_back(std::string(dtype_name(t)));
      else if (resolves(*own, *r))  // right where the failure would have shown
        absent.push_back(std::string(dtype_name(t)));
    }
    note(axis_phrase("in ", present, absent, "in "));
  }

  {
    std::vector<int64_t> dims{16, 64, 128, failing.shape.head_dim};
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
    std::vector<std::string> present, absent;
    // The family's member at the case's own head_dim must show the failure,
    // or its absence elsewhere says nothing; a head_dim counts as absent only
    // where its bound could have seen that failure (the same output shape
    // [b][h][q_len][value_dim], element by element, as for the dtypes).
    std::optional<ProbeRun> own_family;
    if (const std::optional<ProbeRun> r = budget.run(impl, like_at_head_dim(failing, failing.shape.head_dim));
        r && r->judged > 0 && !r->correct)
      own_family = r;
    for (int64_t d : dims) {
      if (!own_family) break;
      if (d == failing.shape.head_dim) {
        present.push_back(std::to_string(d));
        continue;
      }
      const std::optional<ProbeRun> r = budget.run(impl, like_at_head_dim(failing, d));
      if (!r || r->judged == 0) continue;
      if (!r->correct)
        present.push_back(std::to_string(d));
      else if (resolves(*own_family, *r))
        absent.push_back(std::to_string(d));
    }
    if (own_family) note(axis_phrase("at head_dim ", present, absent, "at "));
  }

  if (failing.causal != Causal::none) {
    Problem p = failing;
    p.causal = Causal::none;
    if (seen(impl, p, budget) == Seen::absent)
      said.push_back("wrong only with causal " + std::string(causal_name(failing.causal)) +
                     " (right without a causal rule)");
  }
  if (failing.has_mask()) {
    Problem p = failing;
    p.mask.clear();
    if (seen(impl, p, budget) == Seen::absent) said.push_back("wrong only with the mask (right without it)");
  }
  return said;
}

}  // namespace attncheck
