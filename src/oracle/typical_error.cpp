// The typical-error model: docs/tolerance.md, "The typical error", derives
// every term below; the comments name them.
#include "oracle/typical_error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>


namespace attncheck {
namespace {

// E[delta^2] / u^2 for one rounding to nearest of a value whose magnitude is
// spread evenly (log-uniformly) over a binade: the error is uniform on
// [-u 2^e, u 2^e] for x in [2^e, 2^(e+1)), so E[(err/x)^2] = u^2/3 * E[(2^e/x)^2]
// = u^2/3 * 0.375/ln 2 = 0.180 u^2.
constexpr double kRoundingVariance = 0.375 / 0.6931471805599453 / 3.0;

// About 2^23 multiply-adds per problem: rows are sampled evenly beyond that.
constexpr double kWorkPerProblem = 8388608.0;

// Features whose arithmetic the model does not describe (each adds its own roundings).
constexpr FeatureBits kUnmodelled =
    ATTNCHECK_FEATURE_SOFTCAP | ATTNCHECK_FEATURE_BIAS | ATTNCHECK_FEATURE_ALIBI | ATTNCHECK_FEATURE_SINKS;

// Significant bits of x's binary significand (0 for zero).
int significant_bits(double x) {
  if (x == 0) return 0;
  int e = 0;
  const double m = std::frexp(std::abs(x), &e);  // [0.5, 1)
  auto bits = static_cast<uint64_t>(std::ldexp(m, 53));
  int n = 53;
  while ((bits & 1u) == 0) {
    bits >>= 1;
    --n;
  }
  return n;
}

// Why one tensor does not look like Gaussian draws; empty when it does.
std::string not_gaussian_like(const std::vector<double>& x, const char* name) {
  const std::string t(name);
  if (x.size() < 16) return t + " has fewer than 16 elements";
  double sum = 0, sum2 = 0;
  int64_t short_ones = 0;
  for (double e : x) {
    if (!std::isfinite(e)) return t + " is not finite";
    sum += e;
    sum2 += e * e;
    if (significant_bits(e) <= 4) ++short_ones;
  }
  const double n = static_cast<double>(x.size());
  const double mean = sum / n, rms = std::sqrt(sum2 / n), var = std::max(0.0, sum2 / n - mean * mean);
  if (mean * mean > var) return t + "'s mean is more than one standard deviation from zero";
  for (double e : x)
    if (std::abs(e) > 6 * rms) return t + " has elements beyond 6 root-mean-squares";
  if (4 * short_ones > static_cast<int64_t>(x.size())) return t + ": over a quarter of it has 4 significant bits or fewer";
  return {};
}

}  // namespace

std::string typical_error_model_excludes(const Problem& p) {
  if (p.is_backward()) return "a backward problem (the model is the forward's)";
  if (p.dtype == DType::f64) return "f64 (the oracle's exact value is stored in double, as precise as the output)";
  if (p.features() & kUnmodelled) return "a soft-cap, bias, ALiBi or sinks (their arithmetic is not modelled)";
  for (auto [x, name] : {std::pair{&p.q, "q"}, std::pair{&p.k, "k"}, std::pair{&p.v, "v"}})
    if (std::string why = not_gaussian_like(*x, name); !why.empty()) return why;
  return {};
}

double ulp_at(double x, DType t) {
  const DTypeInfo& d = info(t);
  const double a = std::abs(x);
  if (!(a >= d.min_normal)) return d.min_subnormal;
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  return std::ldexp(2 * d.unit_roundoff, e - 1);
}

std::vector<double> typical_error(const Problem& p, const OracleResult& o, bool stored16) {
  const Shape& s = p.shape;
  std::vector<double> sigma(static_cast<std::size_t>(s.out_size()), std::numeric_limits<double>::quiet_NaN());
  if (!typical_error_model_excludes(p).empty()) return sigma;
  const double u = unit_roundoff(compute_dtype(p.dtype));  // every intermediate: f32
  const double r2 = kRoundingVariance * u * u;             // one rounding's relative variance
  // 7. Intermediates stored in the 16-bit format (the bound's section 6): its roundings too.
  const double u16 = unit_roundoff(p.dtype);
  const double r16 = stored16 && info(p.dtype).is_16bit() ? kRoundingVariance * u16 * u16 : 0;
  // Products of two 16-bit numbers are exact in f32; f32 products are rounded once.
  const bool products_round = !info(p.dtype).is_16bit();
  const double scale = p.effective_scale();
  const bool default_scale = std::isnan(p.scale);  // 1/sqrt(D) rounded once, common to every logit
  const int64_t rows = s.rows();
  const double row_work = static_cast<double>(s.kv_len) * static_cast<double>(s.head_dim + 2 * s.value_dim);
  const auto stride = static_cast<int64_t>(std::max(1.0, std::ceil(static_cast<double>(rows) * row_work / kWorkPerProblem)));

  std::vector<int64_t> keys;
  std::vector<double> logit, var_eps, w;
  for (int64_t r = 0; r < rows; r += stride) {
    const int64_t bh = r / s.q_len, i = r % s.q_len, kv = p.kv_of(bh);
    if (!p.row_exists(bh, i) || !std::isfinite(o.bound[static_cast<std::size_t>(p.out_at(bh, i, 0))])) continue;
    keys.clear();
    for (int64_t j = 0; j < s.kv_len; ++j)
      if (p.visible(bh, i, j)) keys.push_back(j);
    if (keys.size() < 2) continue;
    const std::size_t n = keys.size();
    logit.assign(n, 0);
    var_eps.assign(n, 0);
    w.assign(n, 0);
    // 1. The logits, summed over d in order: sum_t S_t^2 over the partial sums (t >= 2).
    for (std::size_t a = 0; a < n; ++a) {
      double dot = 0, partial2 = 0, products2 = 0;
      for (int64_t d = 0; d < s.head_dim; ++d) {
        const double t = p.q[static_cast<std::size_t>(p.q_at(bh, i, d))] * p.k[static_cast<std::size_t>(p.k_at(kv, keys[a], d))];
        dot += t;
        products2 += t * t;
        if (d > 0) partial2 += dot * dot;
      }
      logit[a] = scale * dot;
      var_eps[a] = r2 * (scale * scale * (partial2 + (products_round ? products2 : 0)) + logit[a] * logit[a]);
    }
    // 2-3. The max subtraction and exp, each rounded once: relative errors of the weight.
    const double m = *std::max_element(logit.begin(), logit.end());
    double total = 0, den_partial2 = 0, w2 = 0;
    for (std::size_t a = 0; a < n; ++a) {
      w[a] = std::exp(logit[a] - m);
      var_eps[a] += (r2 + r16) * ((logit[a] - m) * (logit[a] - m) + 1) + r16 * logit[a] * logit[a];
      total += w[a];
      w2 += w[a] * w[a];
      if (a > 0) den_partial2 += total * total;
    }
    // A row one key dominates (fewer than 2 effective keys, 1 / sum_j p_j^2) is
    // computed nearly exactly (the others' weights vanish in the sums), not with
    // random roundings: not graded.
    if (total * total < 2 * w2) continue;
    // 4-6. Per value column: the logits through the softmax, the numerator's
    // and the denominator's sums, the scale, the division and the output's rounding.
    for (int64_t c = 0; c < s.value_dim; ++c) {
      const std::size_t at = static_cast<std::size_t>(p.out_at(bh, i, c));
      const double oc = o.exact[at];
      double through_softmax = 0, num = 0, num_partial2 = 0, products2 = 0, scale_term = 0;
      for (std::size_t a = 0; a < n; ++a) {
        const double v = p.v[static_cast<std::size_t>(p.v_at(kv, keys[a], c))];
        const double pj = w[a] / total, dev = v - oc;
        through_softmax += pj * pj * (dev * dev * var_eps[a] + r16 * v * v);  // r16: the weight stored for P.V
        scale_term += pj * logit[a] * dev;
        const double x = w[a] * v;
        num += x;
        products2 += x * x;
        if (a > 0) num_partial2 += num * num;
      }
      double var = through_softmax + r2 * (num_partial2 + products2 + oc * oc * den_partial2) / (total * total);
      if (default_scale) var += r2 * scale_term * scale_term;
      const double ulp = ulp_at(oc, p.dtype);
      var += ulp * ulp / 12 + (info(p.dtype).is_16bit() ? r2 * oc * oc : 0);
      sigma[at] = std::sqrt(var);
    }
  }
  return sigma;
}

std::optional<AccuracyCase> grade_case(const Problem& p, const OracleResult& o, const std::vector<double>& out) {
  if (!typical_error_model_excludes(p).empty()) return std::nullopt;
  const std::vector<double> sigma = typical_error(p, o);
  const bool narrow = info(p.dtype).is_16bit();
  const std::vector<double> sigma16 = narrow ? typical_error(p, o, true) : std::vector<double>();
  AccuracyCase g;
  g.dtype = p.dtype;
  double sum2 = 0, sum2_16 = 0;
  for (std::size_t k = 0; k < sigma.size(); ++k) {
    if (!(sigma[k] > 0) || !std::isfinite(sigma[k])) continue;
    const double err = std::abs(out[k] - o.exact[k]);
    const double e = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
    sum2 += (e / sigma[k]) * (e / sigma[k]);
    const double s16 = narrow ? sigma16[k] : sigma[k];
    sum2_16 += (e / s16) * (e / s16);
    g.worst_ulps = std::max(g.worst_ulps, e / ulp_at(o.exact[k], p.dtype));
    g.worst_of_bound = std::max(g.worst_of_bound, o.bound[k] > 0 ? e / o.bound[k] : (e > 0 ? INFINITY : 0.0));
    ++g.elements;
  }
  if (g.elements == 0) return std::nullopt;
  g.typical_rms = std::sqrt(sum2 / static_cast<double>(g.elements));
  g.stored16_rms = std::sqrt(sum2_16 / static_cast<double>(g.elements));
  return g;
}

}  // namespace attncheck
