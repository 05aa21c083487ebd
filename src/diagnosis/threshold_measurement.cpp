// A logit threshold: wrong only when a logit exceeds some value.
//
// One problem of 32 query rows over the same 16 keys, row i's largest exact
// |logit| set to 0.5 * 4000^(i/31), V = identity so every weight is judged.
// If every right row has smaller logits than every wrong row, the edge lies
// between them; a second problem of 32 rows spaced across that gap places it
// to within a few percent. The edge is tried both on the largest logit
// (overflow-like faults: exp(s) past a limit) and on the largest |logit|.
#include <algorithm>
#include <cmath>

#include "diagnosis/measurement_steps.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

constexpr int64_t kRows = 32, kKeys = 16;
// Below this the logits are those of ordinary inputs: a fault seen from there
// on is not a threshold worth naming.
constexpr double kSmallestEdge = 4;

struct Row {
  double top, top_abs;  // largest exact logit, largest exact |logit|
  bool wrong;
};

// Rows of one probe that the oracle judges, with their verdicts.
std::vector<Row> judged_rows(const Problem& p, const ProbeRun& r) {
  std::vector<Row> rows;
  for (int64_t i = 0; i < p.shape.q_len; ++i) {
    bool judged = false, wrong = false;
    for (int64_t c = 0; c < p.shape.value_dim; ++c) {
      const int64_t k = p.out_at(0, i, c);
      if (!std::isfinite(r.right.bound[k])) continue;
      judged = true;
      wrong = wrong || !(std::abs(r.out[k] - r.right.exact[k]) <= r.right.bound[k]);
    }
    if (!judged) continue;
    double top = -INFINITY, top_abs = 0;
    for (long double s : row_logits(p, 0, i)) {
      if (!std::isfinite(s)) continue;
      top = std::max(top, static_cast<double>(s));
      top_abs = std::max(top_abs, std::abs(static_cast<double>(s)));
    }
    rows.push_back({top, top_abs, wrong});
  }
  return rows;
}

// The gap (largest right value, smallest wrong value) when it separates.
struct Edge {
  double below, above;
};
std::optional<Edge> edge(const std::vector<Row>& rows, double Row::*size) {
  double below = -INFINITY, above = INFINITY;
  int right = 0, wrong = 0;
  for (const Row& r : rows) {
    if (r.wrong) above = std::min(above, r.*size), ++wrong;
    else below = std::max(below, r.*size), ++right;
  }
  if (right < 2 || wrong < 2 || !(below < above) || below < kSmallestEdge) return std::nullopt;
  return Edge{below, above};
}

Problem rows_sized(const Problem& failing, double from, double to, uint64_t seed) {
  const Shape shape{1, 1, kRows, kKeys, failing.shape.head_dim, 1};
  const double scale = std::isfinite(failing.effective_scale()) && failing.effective_scale() != 0 ? failing.scale : NAN;
  std::vector<double> size(kRows);
  for (int64_t i = 0; i < kRows; ++i) size[i] = from * std::pow(to / from, static_cast<double>(i) / (kRows - 1));
  return with_identity_values(with_row_logit_sizes(gaussian_probe(failing.dtype, shape, scale, 1.0, seed), size));
}

}  // namespace

std::vector<std::string> measure_threshold(Implementation& impl, const Problem& failing, ProbeBudget& budget) {
  const Problem coarse = rows_sized(failing, 0.5, 2000, 0x7e57);
  const std::optional<ProbeRun> r = budget.run(impl, coarse);
  if (!r || r->correct) return {};
  std::vector<Row> rows = judged_rows(coarse, *r);
  double Row::*size = &Row::top;
  std::optional<Edge> e = edge(rows, size);
  if (!e) e = edge(rows, size = &Row::top_abs);
  if (!e) return {};

  // The finer scan sets |logit| sizes; the largest logit follows them closely.
  const Problem fine = rows_sized(failing, e->below, e->above * 1.05, 0x7e58);
  if (const std::optional<ProbeRun> f = budget.run(impl, fine)) {
    for (const Row& row : judged_rows(fine, *f)) rows.push_back(row);
    e = edge(rows, size);
    if (!e) return {};  // the finer rows contradict the edge: no clean threshold
  }
  const double at = std::sqrt(e->below * e->above);
  return {std::string(size == &Row::top ? "wrong only when a logit exceeds " : "wrong only when |logit| exceeds ") +
          significant(at, 2)};
}

}  // namespace attncheck
