// The fault-model table: one small function per fault. Problems that express
// a fault are handed to the oracle; the rest are computed here in long double
// row by row, with the correct oracle's bound (or a summation bound) as
// tolerance.
#include "diagnosis/fault_models.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "diagnosis/oracle_predictions.h"
#include "oracle/oracle.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

using LD = long double;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- scale faults ------------------------------------------------------------

std::optional<Prediction> scale_one(const Problem& p) {
  if (p.effective_scale() == 1) return std::nullopt;
  Problem r = p;
  r.scale = 1;
  return by_oracle(r);
}

std::optional<Prediction> scale_inverse_d(const Problem& p) {
  if (!std::isnan(p.scale) || p.shape.head_dim == 1) return std::nullopt;
  Problem r = p;
  r.scale = 1.0 / static_cast<double>(p.shape.head_dim);
  return by_oracle(r);
}

std::optional<Prediction> scale_inverse_sqrt_value_dim(const Problem& p) {
  if (!std::isnan(p.scale) || p.shape.value_dim == p.shape.head_dim) return std::nullopt;
  Problem r = p;
  r.scale = 1.0 / std::sqrt(static_cast<double>(p.shape.value_dim));
  return by_oracle(r);
}

// ---- softmax faults ----------------------------------------------------------

// exp of the raw logits in the dtype's working type: a logit past its exp
// range gives inf and inf/inf = NaN for the row; a sum past the largest value
// gives zeros; all weights underflowing gives 0/0 = NaN. Else correct.
std::optional<Prediction> no_max_subtraction(const Problem& p) {
  const bool dbl = compute_dtype(p.dtype) == DType::f64;
  const LD big = dbl ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max();
  const LD tiny = dbl ? std::numeric_limits<double>::denorm_min() : std::numeric_limits<float>::denorm_min();
  Prediction pr = by_oracle(p);
  const Shape& s = p.shape;
  bool differs = false;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      bool any = false, overflow = false, all_under = true;
      LD sum = 0;
      for (int64_t j = 0; j < s.kv_len; ++j) {
        if (!p.visible(bh, i, j)) continue;
        any = true;
        const LD w = std::exp(exact_logit(p, bh, i, j));
        if (w > big) overflow = true;
        if (w >= tiny / 2) all_under = false;
        sum += w;
      }
      if (!any || !(overflow || all_under || sum > big)) continue;
      differs = true;
      const double fill = (overflow || all_under) ? kNaN : 0.0;
      for (int64_t c = 0; c < s.value_dim; ++c) {
        pr.out[p.out_at(bh, i, c)] = fill;
        pr.bound[p.out_at(bh, i, c)] = 0;
      }
    }
  if (!differs) return std::nullopt;
  return pr;
}

// Each key's weights normalised over the query rows that see it, not each
// row over its keys.
std::optional<Prediction> softmax_over_queries(const Problem& p) {
  const Shape& s = p.shape;
  if (s.q_len == 1 && s.kv_len == 1) return std::nullopt;
  Prediction pr = by_oracle(p);
  std::vector<LD> w(s.q_len * s.kv_len);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    for (int64_t j = 0; j < s.kv_len; ++j) {
      LD m = -INFINITY, sum = 0;
      for (int64_t i = 0; i < s.q_len; ++i)
        if (p.visible(bh, i, j)) m = std::max(m, exact_logit(p, bh, i, j));
      for (int64_t i = 0; i < s.q_len; ++i) {
        w[i * s.kv_len + j] = p.visible(bh, i, j) ? std::exp(exact_logit(p, bh, i, j) - m) : 0;
        sum += w[i * s.kv_len + j];
      }
      for (int64_t i = 0; i < s.q_len; ++i)
        if (sum > 0) w[i * s.kv_len + j] /= sum;
    }
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t c = 0; c < s.value_dim; ++c) {
        LD out = 0;
        // Only the keys the row sees: an unseen key's value is never read (a
        // NaN in padding times its weight 0 would make the prediction NaN,
        // and match any kernel that leaks NaN from the padding).
        for (int64_t j = 0; j < s.kv_len; ++j)
          if (p.visible(bh, i, j)) out += w[i * s.kv_len + j] * static_cast<LD>(p.v[p.v_at(p.kv_of(bh), j, c)]);
        pr.out[p.out_at(bh, i, c)] = static_cast<double>(out);
      }
  }
  return pr;
}

// The founding "fix": out[i][c] = sum over visible j of v[j][c] * q[i][c % head_dim].
std::optional<Prediction> softmax_weights_dropped(const Problem& p) {
  const Shape& s = p.shape;
  const double u = unit_roundoff(compute_dtype(p.dtype));
  Prediction pr{std::vector<double>(s.out_size()), std::vector<double>(s.out_size()), {}, {}};  // no lse
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t c = 0; c < s.value_dim; ++c) {
        LD out = 0, mag = 0;
        int64_t n = 0;
        const LD qc = p.q[p.q_at(bh, i, c % s.head_dim)];
        for (int64_t j = 0; j < s.kv_len; ++j) {
          if (!p.visible(bh, i, j)) continue;
          const LD term = static_cast<LD>(p.v[p.v_at(p.kv_of(bh), j, c)]) * qc;
          out += term;
          mag += std::abs(term);
          ++n;
        }
        const double at = static_cast<double>(out);
        const double bound = 2 * ((n + 2) * u * static_cast<double>(mag) + unit_roundoff(p.dtype) * std::abs(at)) +
                             min_subnormal(p.dtype);
        pr.out[p.out_at(bh, i, c)] = at;
        // A sum within its bound of the dtype's largest value or past it
        // leaves the model free there (NaN): the kernel's sum of V * q is not
        // attention's convex combination and overflows the dtype where
        // attention cannot, e.g. q = 32,768 (the bug reports' scaled and
        // outlier values, gen/value_draws.cpp) times a value of 2 in f16;
        // its ±inf or largest value there is the fault's, not another's.
        // (INFINITY would demand the element be right, contradicting the model.)
        const bool fits = std::isfinite(bound) && std::abs(at) + bound < max_finite(p.dtype);
        pr.bound[p.out_at(bh, i, c)] = fits ? bound : NAN;
      }
  return pr;
}

// ---- causal and mask faults --------------------------------------------------

std::optional<Prediction> causal_alignment_swapped(const Problem& p) {
  if (p.causal == Causal::none || p.shape.q_len == p.shape.kv_len) return std::nullopt;
  Problem r = p;
  r.causal = p.causal == Causal::top_left ? Causal::bottom_right : Causal::top_left;
  return by_oracle(r);
}

std::optional<Prediction> causal_off_by_one(const Problem& p) {
  if (p.causal == Causal::none) return std::nullopt;
  Problem r = p;
  r.causal = Causal::none;
  return by_oracle(with_mask_anded(r, [&p](int64_t, int64_t i, int64_t j) {
    return p.causal_allows(i, j) || p.causal_allows(i, j - 1);
  }));
}

std::optional<Prediction> mask_ignored(const Problem& p) {
  if (!p.has_mask()) return std::nullopt;
  Problem r = p;
  r.mask.clear();
  return by_oracle(r);
}

// Softmax over every key the causal rule allows, then masked weights zeroed
// without renormalising the rest.
std::optional<Prediction> mask_after_softmax(const Problem& p) {
  if (!p.has_mask()) return std::nullopt;
  Problem unmasked = p;
  unmasked.mask.clear();
  Prediction pr = by_oracle(unmasked);
  const Shape& s = p.shape;
  std::vector<LD> w(s.kv_len);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      LD m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < s.kv_len; ++j)
        if (p.causal_allows(i, j)) m = std::max(m, exact_logit(p, bh, i, j));
      for (int64_t j = 0; j < s.kv_len; ++j) {
        w[j] = p.causal_allows(i, j) ? std::exp(exact_logit(p, bh, i, j) - m) : 0;
        sum += w[j];
      }
      for (int64_t c = 0; c < s.value_dim; ++c) {
        LD out = 0;
        for (int64_t j = 0; j < s.kv_len; ++j)
          if (p.visible(bh, i, j)) out += w[j] / sum * static_cast<LD>(p.v[p.v_at(p.kv_of(bh), j, c)]);
        pr.out[p.out_at(bh, i, c)] = sum > 0 ? static_cast<double>(out) : 0.0;
      }
    }
  return pr;
}

std::optional<Prediction> nan_for_empty_rows(const Problem& p) {
  Prediction pr = by_oracle(p);
  const Shape& s = p.shape;
  bool any = false;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
    for (int64_t i = 0; i < s.q_len; ++i) {
      if (p.row_sees_any_key(bh, i)) continue;
      any = true;
      for (int64_t c = 0; c < s.value_dim; ++c) pr.out[p.out_at(bh, i, c)] = kNaN;
    }
  if (!any) return std::nullopt;
  return pr;
}

// ---- wrong data ----------------------------------------------------------------

std::optional<Prediction> last_key_dropped(const Problem& p) {
  const int64_t last = p.shape.kv_len - 1;
  return by_oracle(with_mask_anded(p, [last](int64_t, int64_t, int64_t j) { return j != last; }));
}

// Split-KV decoding merged without rescaling (the zoo's split_kv_merge_unscaled):
// past 2,048 keys the keys go in partitions of 1,024, each partition's weights
// exp(s_j - m_p) against its own max m_p, summed and normalised over the row
// without the factors exp(m_p - max m_p). Up to 2,048 keys nothing differs.
// Its bound is its own (the oracle's is correct attention's, which can be far
// tighter than this computation's rounding where attention's output is near
// zero and the fault's is not): the weighted sum's rounding in the compute
// type, (n + 4) u sum_j w_j |v_j|, and each weight's error from its logit's
// and its partition max's rounding, 2 (D + 2) u |scale| sum_d |q_d k_jd|,
// times how far its value lies from the output; twice that, as every bound.
std::optional<Prediction> split_kv_merge_unscaled(const Problem& p) {
  constexpr int64_t kSplitPast = 2048, kPartitionKeys = 1024;
  const Shape& s = p.shape;
  if (s.kv_len <= kSplitPast) return std::nullopt;
  Prediction pr = by_oracle(p);
  const double u = unit_roundoff(compute_dtype(p.dtype));
  const LD scale = std::abs(static_cast<LD>(p.effective_scale()));
  std::vector<LD> w(s.kv_len), logit_error(s.kv_len);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const int64_t kv = p.kv_of(bh);
    for (int64_t i = 0; i < s.q_len; ++i) {
      LD sum = 0;
      int64_t n = 0;
      for (int64_t p0 = 0; p0 < s.kv_len; p0 += kPartitionKeys) {
        const int64_t p1 = std::min(s.kv_len, p0 + kPartitionKeys);
        LD m = -INFINITY;
        for (int64_t j = p0; j < p1; ++j)
          if (p.visible(bh, i, j)) m = std::max(m, exact_logit(p, bh, i, j));
        for (int64_t j = p0; j < p1; ++j) {
          w[j] = p.visible(bh, i, j) ? std::exp(exact_logit(p, bh, i, j) - m) : 0;
          sum += w[j];
          n += p.visible(bh, i, j);
          LD dot = 0;
          for (int64_t d = 0; d < s.head_dim; ++d)
            dot += std::abs(static_cast<LD>(p.q[p.q_at(bh, i, d)]) * static_cast<LD>(p.k[p.k_at(kv, j, d)]));
          logit_error[j] = 2 * (s.head_dim + 2) * u * scale * dot;
        }
      }
      if (!(sum > 0)) continue;  // a row that sees no key: the oracle's zeros
      for (int64_t c = 0; c < s.value_dim; ++c) {
        LD out = 0, mag = 0;
        for (int64_t j = 0; j < s.kv_len; ++j)
          if (p.visible(bh, i, j)) {
            const LD vj = static_cast<LD>(p.v[p.v_at(kv, j, c)]);
            out += w[j] / sum * vj;
            mag += w[j] / sum * std::abs(vj);
          }
        LD spread = 0;  // the weights' errors, each moving the output towards its value
        for (int64_t j = 0; j < s.kv_len; ++j)
          if (p.visible(bh, i, j))
            spread += w[j] / sum * std::abs(static_cast<LD>(p.v[p.v_at(kv, j, c)]) - out) * std::expm1(logit_error[j]);
        const double at = static_cast<double>(out);
        const double bound = 2 * static_cast<double>((n + 4) * u * mag + spread + unit_roundoff(p.dtype) * std::abs(out)) +
                             min_subnormal(p.dtype);
        pr.out[p.out_at(bh, i, c)] = at;
        // Past the dtype's range the model leaves the element free (NaN).
        pr.bound[p.out_at(bh, i, c)] = std::isfinite(bound) && std::abs(at) + bound < max_finite(p.dtype) ? bound : NAN;
      }
    }
  }
  return pr;
}

std::optional<Prediction> kv_swapped(const Problem& p) {
  if (p.shape.head_dim != p.shape.value_dim) return std::nullopt;
  Problem r = p;
  std::swap(r.k, r.v);
  return by_oracle(r);
}

// Head block bh = b * heads + h read from b' * heads + h' where b' and h' come
// from reading bh as h * batch + b: the strides of the two axes exchanged.
int64_t exchanged_head(const Shape& s, int64_t bh) {
  const int64_t h = bh / s.batch, b = bh % s.batch;
  return b * s.heads + h;
}

std::optional<Prediction> kv_batch_head_exchanged(const Problem& p) {
  const Shape& s = p.shape;
  // With grouped kv heads the two axes have different extents in K/V.
  if (s.batch == 1 || s.heads == 1 || s.kv_head_count() != s.heads) return std::nullopt;
  Problem r = p;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const int64_t from = exchanged_head(s, bh);
    for (int64_t j = 0; j < s.kv_len; ++j) {
      for (int64_t d = 0; d < s.head_dim; ++d) r.k[r.k_at(bh, j, d)] = p.k[p.k_at(from, j, d)];
      for (int64_t c = 0; c < s.value_dim; ++c) r.v[r.v_at(bh, j, c)] = p.v[p.v_at(from, j, c)];
    }
  }
  return by_oracle(r);
}

std::optional<Prediction> output_batch_head_exchanged(const Problem& p) {
  const Shape& s = p.shape;
  if (s.batch == 1 || s.heads == 1) return std::nullopt;
  const Prediction right = by_oracle(p);
  Prediction pr = right;
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
    const int64_t from = exchanged_head(s, bh);
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t c = 0; c < s.value_dim; ++c) {
        pr.out[p.out_at(bh, i, c)] = right.out[p.out_at(from, i, c)];
        pr.bound[p.out_at(bh, i, c)] = right.bound[p.out_at(from, i, c)];
      }
  }
  return pr;
}

}  // namespace

const std::vector<FaultModel>& fault_models() {
  static const std::vector<FaultModel> models = [] {
    std::vector<FaultModel> all = {
        {"attention without the 1/sqrt(d) scale (logits q.k unscaled)", scale_one},
        {"the default scale 1/head_dim instead of 1/sqrt(head_dim)", scale_inverse_d},
        {"the default scale 1/sqrt(value_dim) instead of 1/sqrt(head_dim)", scale_inverse_sqrt_value_dim},
        {"softmax weights dropped: out = sum over visible keys of V * q (the founding \"fix\")", softmax_weights_dropped},
        {"softmax without subtracting the row max (exp overflows to inf, inf/inf = NaN)", no_max_subtraction},
        {"K and V swapped (logits from q.v, output mixes K rows)", kv_swapped},
        {"the causal rule's alignment swapped (top_left vs bottom_right)", causal_alignment_swapped},
        {"the causal rule off by one (each query also sees the next key)", causal_off_by_one},
        {"the last key dropped (key loop stops one short)", last_key_dropped},
        {"split-KV partitions merged without rescaling by their maxima (past 2,048 keys, partitions of 1,024)",
         split_kv_merge_unscaled},
        {"the mask ignored", mask_ignored},
        {"the mask applied after the softmax without renormalising", mask_after_softmax},
        {"NaN instead of zeros for rows that see no key", nan_for_empty_rows},
        {"softmax over the query axis instead of the key axis", softmax_over_queries},
        {"K/V read with the batch and head strides exchanged", kv_batch_head_exchanged},
        {"output written with the batch and head strides exchanged", output_batch_head_exchanged},
    };
    // The ABI v2 faults after them: each applies only where its feature is used.
    const std::vector<FaultModel>& v2 = v2_fault_models();
    all.insert(all.end(), v2.begin(), v2.end());
    // The precision faults last (fault_models.h).
    const std::vector<FaultModel>& narrow = accumulation_fault_models();
    all.insert(all.end(), narrow.begin(), narrow.end());
    return all;
  }();
  return models;
}

}  // namespace attncheck
