// Attention with faults outside the fault models' table, for the diagnosis
// tests: each field of Faults is one such fault, and Faults{} is correct
// attention. Computed straight from the Problem (no ABI), in float for
// f32/f16/bf16 and double for f64 as the built-ins do, the output rounded to
// the problem's dtype.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "impls/implementation.h"

namespace attncheck::testing {

struct Faults {
  double scale_factor = 1;        // logits use this times the requested scale
  double denominator_extra = 0;   // the softmax denominator is (1 + this) * sum_j w_j
  int accumulate_bits = 0;        // > 0: running sums rounded to this many significant bits after every add
  double saturate_above = 0;      // > 0: logits above it are clamped to it
  int64_t only_head_dim = 0;      // > 0: the faults above apply only at this head_dim
  std::optional<DType> only_dtype = {};  // the faults above apply only in this dtype
  bool nan_for_empty_rows = false;  // rows that see no key get NaN instead of zeros
  double masked_logit = 0;          // < 0: keys the mask hides get this logit instead of being left out
  std::vector<DType> unsupported = {};   // dtypes answered UNSUPPORTED
  double output_error = 0;  // every output multiplied by (1 + this) before its rounding, in every dtype
};

class FaultyAttention final : public Implementation {
 public:
  explicit FaultyAttention(Faults f) : f_(std::move(f)) {}
  std::string name() const override { return "faulty"; }
  std::string source() const override { return "test:faulty"; }
  int calls = 0;

  Outcome run(const Problem& p) override {
    ++calls;
    if (std::find(f_.unsupported.begin(), f_.unsupported.end(), p.dtype) != f_.unsupported.end())
      return {CallStatus::unsupported, {}, "not offered"};
    return {CallStatus::ok, compute_dtype(p.dtype) == DType::f64 ? forward<double>(p) : forward<float>(p), ""};
  }

 private:
  // x rounded to `bits` significant bits (nearest); bits <= 0 leaves it.
  template <class T>
  static T rounded(T x, int bits) {
    if (bits <= 0 || x == 0 || !std::isfinite(x)) return x;
    int e = 0;
    const T m = std::frexp(x, &e);
    return std::ldexp(std::nearbyint(std::ldexp(m, bits)), e - bits);
  }

  // out [b][h][q_len][value_dim] from q, k, v of p, one query row at a time.
  template <class T>
  std::vector<double> forward(const Problem& p) const {
    const Shape& s = p.shape;
    const bool faulty = (f_.only_head_dim == 0 || s.head_dim == f_.only_head_dim) &&
                        (!f_.only_dtype || *f_.only_dtype == p.dtype);
    const int bits = faulty ? f_.accumulate_bits : 0;
    const auto masked_logit = [&] { return faulty ? f_.masked_logit : 0.0; };
    const T scale = static_cast<T>(p.effective_scale() * (faulty ? f_.scale_factor : 1));
    std::vector<double> out(s.out_size(), 0.0);
    std::vector<T> w(s.kv_len);
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = 0; i < s.q_len; ++i) {
        T top = -std::numeric_limits<T>::infinity();
        // Keys the kernel lets into the softmax: the visible ones, and with
        // masked_logit < 0 also those only the mask hides (at that logit).
        const auto enters = [&](int64_t j) {
          return p.visible(bh, i, j) || (masked_logit() < 0 && p.causal_allows(i, j));
        };
        for (int64_t j = 0; j < s.kv_len; ++j) {
          if (!enters(j)) continue;
          if (!p.visible(bh, i, j)) {
            w[j] = static_cast<T>(masked_logit());
            top = std::max(top, w[j]);
            continue;
          }
          T dot = 0;
          for (int64_t d = 0; d < s.head_dim; ++d)
            dot += static_cast<T>(p.q[p.q_at(bh, i, d)]) * static_cast<T>(p.k[p.k_at(bh, j, d)]);
          w[j] = scale * dot;
          if (faulty && f_.saturate_above > 0) w[j] = std::min(w[j], static_cast<T>(f_.saturate_above));
          top = std::max(top, w[j]);
        }
        if (std::isinf(top)) {  // sees no key
          if (f_.nan_for_empty_rows)
            for (int64_t c = 0; c < s.value_dim; ++c) out[p.out_at(bh, i, c)] = NAN;
          continue;
        }
        T sum = 0;
        for (int64_t j = 0; j < s.kv_len; ++j) {
          w[j] = enters(j) ? std::exp(w[j] - top) : T(0);
          sum = rounded<T>(sum + w[j], bits);
        }
        const T denominator = sum * static_cast<T>(1 + (faulty ? f_.denominator_extra : 0));
        for (int64_t c = 0; c < s.value_dim; ++c) {
          T acc = 0;
          for (int64_t j = 0; j < s.kv_len; ++j)
            acc = rounded<T>(acc + w[j] / denominator * static_cast<T>(p.v[p.v_at(bh, j, c)]), bits);
          out[p.out_at(bh, i, c)] = round_to(p.dtype, static_cast<double>(acc) * (1 + f_.output_error));
        }
      }
    return out;
  }

  Faults f_;
};

}  // namespace attncheck::testing
