// A knobbed plain backward: a straightforward backward in a compute type T (float for f32/f16/bf16,
// double for f64), as an Implementation, for the gradient laws' tests: the
// forward is plain_two_pass (tests/support/plain_v2_attention.h), the
// backward the textbook formulas row by row, inputs read exactly, gradients
// rounded to the problem's dtype. Knobs put in the backward faults of the
// zoo, so each law can be tested on what it must catch without the built-ins.
//   dP_ij = dO_i . V_j, D_i = dO_i . O_i (O: its own out, in the dtype),
//   dS_ij = P_ij (dP_ij - D_i) (1 - tanh^2(s_ij / c)),
//   dQ_i = scale sum_j dS_ij K_j, dK_j = scale sum_i dS_ij Q_i, dV_j = sum_i P_ij dO_i.
// P is recomputed from the forward's lse rounded to float (as a FlashAttention
// backward does) when `from_lse`, else normalised afresh.
// Shapes: dq [batch][heads][q_len][head_dim], dk [batch][kv_heads][kv_len][head_dim],
// dv [..][value_dim]; padding rows of dq and padding keys of dk, dv are NaN (as decoded).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "impls/implementation.h"
#include "plain_v2_attention.h"

namespace attncheck::testing {

struct BackwardFaults {
  bool no_rowsum = false;                  // dS = P * dP
  bool dq_unscaled = false;                // dQ without the scale
  bool gqa_first_head = false;             // a group's dK/dV from its first query head only
  bool dv_unnormalised = false;            // dV from exp(z - max) without 1/sum
  bool nan_empty_rows = false;             // dq NaN for rows that see no key
  bool softcap_derivative_dropped = false; // dS without 1 - tanh^2
  bool dk_accumulated = false;             // dk += what the previous call left
};

class PlainBackward final : public Implementation {
 public:
  explicit PlainBackward(BackwardFaults f = {}, bool from_lse = true, std::string name = "plain_backward")
      : faults_(f), from_lse_(from_lse), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::string source() const override { return "test:" + name_; }
  FeatureBits features() const override { return kEveryFeature; }
  Outcome run(const Problem& p) override {
    return p.dtype == DType::f64 ? run_in<double>(p) : run_in<float>(p);
  }

 private:
  template <class T> Outcome run_in(const Problem& p) {
    Outcome o;
    const PlainResult fwd = plain_two_pass<T>(p, false);
    o.out = fwd.out;
    if (p.lse_requested) o.lse = fwd.lse;
    if (!p.is_backward()) return o;
    const Shape& s = p.shape;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<T> dq(s.q_size(), 0), dk(s.k_size(), 0), dv(s.v_size(), 0);
    const T scale = static_cast<T>(p.effective_scale());
    const int64_t group = s.heads / s.kv_head_count();
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) {
      const int64_t kv = p.kv_of(bh);
      const bool first_of_group = (bh % s.heads) % group == 0;
      for (int64_t i = 0; i < p.q_len_of(bh / s.heads); ++i) {
        if (!p.row_sees_any_key(bh, i)) {
          if (faults_.nan_empty_rows)
            for (int64_t d = 0; d < s.head_dim; ++d) dq[p.q_at(bh, i, d)] = static_cast<T>(nan);
          continue;
        }
        std::vector<T> z(s.kv_len, -std::numeric_limits<T>::infinity()), pre(s.kv_len, 0);
        T top = static_cast<T>(p.sink_of(bh));
        for (int64_t j = 0; j < s.kv_len; ++j) {
          if (!p.visible(bh, i, j)) continue;
          pre[j] = plain_score<T>(p, bh, i, j);
          z[j] = plain_logit<T>(p, bh, i, j, pre[j], [](T x) { return x; });
          top = std::max(top, z[j]);
        }
        T sum = std::isinf(p.sink_of(bh)) ? T(0) : std::exp(static_cast<T>(p.sink_of(bh)) - top);
        for (int64_t j = 0; j < s.kv_len; ++j)
          if (p.visible(bh, i, j)) sum += std::exp(z[j] - top);
        const T lse = from_lse_ ? static_cast<T>(static_cast<float>(top + std::log(sum))) : top + std::log(sum);
        T D = 0;
        for (int64_t c = 0; c < s.value_dim; ++c)
          D += static_cast<T>(p.dout[p.out_at(bh, i, c)]) * static_cast<T>(fwd.out[p.out_at(bh, i, c)]);
        for (int64_t j = 0; j < s.kv_len; ++j) {
          if (!p.visible(bh, i, j)) continue;
          const T w = from_lse_ ? std::exp(z[j] - lse) : std::exp(z[j] - top) / sum;
          T dP = 0;
          for (int64_t c = 0; c < s.value_dim; ++c)
            dP += static_cast<T>(p.dout[p.out_at(bh, i, c)]) * static_cast<T>(p.v[p.v_at(kv, j, c)]);
          T dS = faults_.no_rowsum ? w * dP : w * (dP - D);
          if (p.softcap > 0 && !faults_.softcap_derivative_dropped) {
            const T t = std::tanh(pre[j] / static_cast<T>(p.softcap));
            dS *= T(1) - t * t;
          }
          const bool to_kv = !faults_.gqa_first_head || first_of_group;
          for (int64_t d = 0; d < s.head_dim; ++d) {
            dq[p.q_at(bh, i, d)] += (faults_.dq_unscaled ? T(1) : scale) * dS * static_cast<T>(p.k[p.k_at(kv, j, d)]);
            if (to_kv) dk[p.k_at(kv, j, d)] += scale * dS * static_cast<T>(p.q[p.q_at(bh, i, d)]);
          }
          const T wv = faults_.dv_unnormalised ? std::exp(z[j] - top) : w;
          if (to_kv)
            for (int64_t c = 0; c < s.value_dim; ++c)
              dv[p.v_at(kv, j, c)] += wv * static_cast<T>(p.dout[p.out_at(bh, i, c)]);
        }
      }
    }
    auto out = [&](const std::vector<T>& g, std::vector<double>& to) {
      to.resize(g.size());
      for (std::size_t k = 0; k < g.size(); ++k) to[k] = round_to(p.dtype, static_cast<double>(g[k]));
    };
    out(dq, o.dq);
    out(dk, o.dk);
    out(dv, o.dv);
    if (faults_.dk_accumulated) {
      if (previous_dk_.size() == o.dk.size())
        for (std::size_t k = 0; k < o.dk.size(); ++k) o.dk[k] = round_to(p.dtype, o.dk[k] + previous_dk_[k]);
      previous_dk_ = o.dk;
    }
    // Padding decodes as NaN.
    for (int64_t bh = 0; bh < s.batch * s.heads; ++bh)
      for (int64_t i = p.q_len_of(bh / s.heads); i < s.q_len; ++i)
        for (int64_t d = 0; d < s.head_dim; ++d) o.dq[p.q_at(bh, i, d)] = nan;
    for (int64_t kv = 0; kv < s.batch * s.kv_head_count(); ++kv)
      for (int64_t j = p.kv_len_of(kv / s.kv_head_count()); j < s.kv_len; ++j) {
        for (int64_t d = 0; d < s.head_dim; ++d) o.dk[p.k_at(kv, j, d)] = nan;
        for (int64_t c = 0; c < s.value_dim; ++c) o.dv[p.v_at(kv, j, c)] = nan;
      }
    return o;
  }

  BackwardFaults faults_;
  bool from_lse_;
  std::string name_;
  std::vector<double> previous_dk_;
};

}  // namespace attncheck::testing
