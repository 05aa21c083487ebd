#include "diagnosis/oracle_predictions.h"

#include <cmath>
#include <limits>

#include "oracle/oracle.h"

namespace attncheck {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool zero_nans(std::vector<double>& t) {
  bool any = false;
  for (double& x : t)
    if (std::isnan(x)) x = 0, any = true;
  return any;
}

void predict_nan(Prediction& pr, int64_t at) {
  pr.out[at] = kNaN;
  pr.bound[at] = 0;
}

}  // namespace

Prediction by_oracle(const Problem& expressed) {
  OracleResult o = oracle(expressed);
  judge_empty_rows_as_zeros(o);  // a model predicts exact zeros for rows that see nothing
  return {std::move(o.exact), std::move(o.bound), std::move(o.lse_exact), std::move(o.lse_bound)};
}

Prediction by_fault_oracle(const Problem& p) {
  Problem finite = p;
  bool any = false;
  for (std::vector<double>* t : {&finite.q, &finite.k, &finite.v, &finite.bias}) any = zero_nans(*t) || any;
  Prediction pr = by_oracle(finite);
  const Shape& s = p.shape;
  for (int64_t bh = 0; bh < s.batch * s.heads && any; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (!p.row_exists(bh, i) || !p.row_sees_any_key(bh, i)) continue;  // no logit computed: zeros
      bool row_nan = false;
      for (int64_t d = 0; d < s.head_dim; ++d) row_nan = row_nan || std::isnan(p.q[p.q_at(bh, i, d)]);
      std::vector<char> col_nan(static_cast<std::size_t>(s.value_dim), 0);
      for (int64_t j = 0; j < s.kv_len && !row_nan; ++j) {
        if (!p.visible(bh, i, j)) continue;
        const int64_t kv = p.kv_of(bh);
        for (int64_t d = 0; d < s.head_dim; ++d) row_nan = row_nan || std::isnan(p.k[p.k_at(kv, j, d)]);
        row_nan = row_nan || (p.has_bias() && std::isnan(p.bias[p.bias_at(bh, i, j)]));
        for (int64_t c = 0; c < s.value_dim; ++c) col_nan[c] = col_nan[c] || std::isnan(p.v[p.v_at(kv, j, c)]);
      }
      for (int64_t c = 0; c < s.value_dim; ++c)
        if (row_nan || col_nan[c]) predict_nan(pr, p.out_at(bh, i, c));
      if (row_nan) {
        pr.lse[bh * s.q_len + i] = kNaN;
        pr.lse_bound[bh * s.q_len + i] = 0;
      }
    }
  // Rows outside the domain (a judged bound would be finite): free.
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (!p.row_exists(bh, i) || !p.row_sees_any_key(bh, i)) continue;
      for (int64_t c = 0; c < s.value_dim; ++c)
        if (std::isinf(pr.bound[p.out_at(bh, i, c)])) pr.bound[p.out_at(bh, i, c)] = kNaN;
      const int64_t row = bh * s.q_len + i;
      if (std::isinf(pr.lse_bound[row])) pr.lse_bound[row] = kNaN;
    }
  return pr;
}

}  // namespace attncheck
