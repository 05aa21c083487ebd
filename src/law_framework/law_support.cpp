#include "law_framework/law_support.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "law_framework/law_calls.h"
#include "problem/number_text.h"

namespace attncheck {

std::optional<Verdict> run_for(Implementation& impl, const Problem& p, std::vector<double>& out) {
  Outcome o = impl.run(p);
  if (auto bad = unusable(o)) return bad;
  out = std::move(o.out);
  return std::nullopt;
}

std::optional<Verdict> run_with_oracle(Implementation& impl, const Problem& p, CheckedRun& run) {
  if (auto bad = run_for(impl, p, run.out)) return bad;
  run.oracle = oracle(p);
  return std::nullopt;
}

Verdict oracle_verdict(const Problem& p, const CheckedRun& run, const std::string& lead, const std::string& what,
                       const std::string& expected) {
  const Comparison c = compare_to_oracle(p, run.oracle, run.out);
  if (c.ok) return Verdict::pass();
  const int64_t k = c.worst_index;
  std::ostringstream m;
  m << lead << c.violations << " element(s) " << what << "; worst " << output_element(p, k) << ": "
    << compared_values("got", run.out[k], expected, run.oracle.exact[k], p.dtype, run.oracle.bound[k]);
  return Verdict::fail(m.str());
}

namespace {

// The weights of `identity` (V = the kv_len x kv_len identity) read in blocks
// of `dv` keys (with_identity_block), for an implementation that takes only its
// own value_dim (a kernel built for value_dim = head_dim = 128). Each output is one weight times 1, as with the full
// identity. nullopt when every block was answered (weights filled, [b][h][q_len][kv_len]).
std::optional<Verdict> weights_by_blocks(Implementation& impl, const Problem& identity, int64_t dv,
                                         std::vector<double>& weights) {
  const Shape& s = identity.shape;
  weights.assign(s.out_size(), 0.0);
  for (int64_t first = 0; first < s.kv_len; first += dv) {
    const Problem block = with_identity_block(identity, first, dv);
    std::vector<double> out;
    if (auto bad = run_for(impl, block, out)) return bad;
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i)
        for (int64_t c = 0; c < dv && first + c < s.kv_len; ++c)
          weights[identity.out_at(bh, i, first + c)] = out[block.out_at(bh, i, c)];
  }
  return std::nullopt;
}

}  // namespace

Law weights_law(std::string name, std::string statement, WeightsCheck check,
                std::function<Problem(const Problem&)> prepare) {
  Law law;
  law.name = std::move(name);
  law.statement = std::move(statement);
  law.tailor = [](GenOptions& g) { g.max_kv_len = std::min(g.max_kv_len, kMaxIdentityKeys); };
  law.check = [check = std::move(check), prepare = std::move(prepare)](Implementation& impl, const Problem& base) {
    if (base.shape.kv_len > kMaxIdentityKeys) return Verdict::not_applicable("kv_len above kMaxIdentityKeys");
    const Problem prepared = prepare ? prepare(base) : base;
    const Problem p = with_identity_values(prepared);
    std::vector<double> weights;
    bool blocked = false;
    if (auto bad = run_for(impl, p, weights)) {
      // Unsupported value_dim = kv_len: read the same weights through the value_dim it was drawn with.
      if (bad->status != VerdictStatus::unsupported || prepared.shape.value_dim == p.shape.value_dim) return *bad;
      if (auto unread = weights_by_blocks(impl, p, prepared.shape.value_dim, weights)) return *unread;
      blocked = true;
    }
    Verdict v = check(p, weights);
    if (!v.failed()) return v;
    // The failing call, saved and printed: the V = identity call (or the first
    // block of it), which this law checked as a case builds again unchanged.
    const std::string prepared_text = prepared == base ? "" : changes_from(base, prepared) + " and ";
    const int64_t n = p.shape.kv_len, dv = prepared.shape.value_dim;
    std::ostringstream d;
    d << "the case with " << prepared_text << "V = the " << n << " x " << n << " identity (value_dim " << base.shape.value_dim
      << " -> " << n << "), so that each output row is its row's attention weights";
    if (!blocked) return std::move(v).on({{"V = identity", d.str(), p}});
    std::ostringstream b;
    b << "the case with " << prepared_text << "V = columns 0.." << std::min(dv, n) - 1 << " of the " << n << " x " << n
      << " identity (value_dim " << dv << ": the implementation refused value_dim " << n
      << "), the first of the " << (n + dv - 1) / dv << " calls that read the weights in blocks of " << dv
      << " keys; the law makes the others from it";
    return std::move(v).on({{"V = identity, first block", b.str(), with_identity_block(p, 0, dv)}});
  };
  return law;
}

std::string output_element(const Problem& p, int64_t flat) {
  const Shape& s = p.shape;
  const int64_t c = flat % s.value_dim, i = (flat / s.value_dim) % s.q_len,
                h = (flat / (s.value_dim * s.q_len)) % s.heads, b = flat / (s.value_dim * s.q_len * s.heads);
  std::ostringstream os;
  os << "[b=" << b << "][h=" << h << "][i=" << i << "][c=" << c << "]";
  return os.str();
}

std::string output_row(const Problem& p, int64_t bh, int64_t i) {
  std::ostringstream os;
  os << "[b=" << bh / p.shape.heads << "][h=" << bh % p.shape.heads << "][i=" << i << "]";
  return os.str();
}

std::string num(double x) {
  std::ostringstream os;
  os.precision(6);
  os << x;
  return os.str();
}

std::optional<std::string> mismatch(const Problem& p, const std::vector<double>& a, const std::vector<double>& tol_a,
                                    const std::vector<double>& b, const std::vector<double>& tol_b,
                                    const char* name_a, const char* name_b) {
  double worst = 0;
  int64_t at = -1;
  int64_t count = 0;
  for (std::size_t k = 0; k < a.size() && k < b.size(); ++k) {
    if (a[k] == b[k]) continue;  // equal values agree, equal infinities included (inf - inf is NaN)
    const double tol = tol_a[k] + tol_b[k];
    if (std::isinf(tol)) continue;
    const double d = std::abs(a[k] - b[k]);
    // Bitwise-equal NaNs agree; any other NaN is a mismatch.
    if (std::isnan(a[k]) && std::isnan(b[k])) continue;
    const double ratio = std::isnan(d) ? INFINITY : (tol > 0 ? d / tol : (d > 0 ? INFINITY : 0));
    if (ratio > 1) {
      ++count;
      if (ratio > worst) { worst = ratio; at = static_cast<int64_t>(k); }
    }
  }
  if (at < 0) return std::nullopt;
  std::ostringstream os;
  os << count << " element(s) differ; worst " << output_element(p, at) << ": "
     << compared_values(std::string(name_a) + " =", a[at], std::string(name_b) + " =", b[at], p.dtype,
                        tol_a[at] + tol_b[at]);
  return os.str();
}

}  // namespace attncheck
