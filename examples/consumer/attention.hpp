// The attention function under test: out = softmax(scale * q k^T over the
// visible keys) v, for f32 and f64, with the plugin ABI's meaning
// (attncheck/plugin.h: tensor layouts, causal rules, mask, NaN scale =
// 1/sqrt(head_dim), zeros for a row that sees no key). A functor with state:
// its logits scratch row is kept between calls.
#pragma once

#include <attncheck/plugin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

class ScaledDotProductAttention {
 public:
  // scale_logits = false is the founding case's bug (q.k never divided by
  // sqrt(d)), kept here to show what a caught fault looks like.
  explicit ScaledDotProductAttention(bool scale_logits = true) : scale_logits_(scale_logits) {}

  int operator()(const attncheck_call* c, char* err, size_t err_len) {
    if (c->dtype == ATTNCHECK_F32) return run<float>(*c);
    if (c->dtype == ATTNCHECK_F64) return run<double>(*c);
    std::snprintf(err, err_len, "ScaledDotProductAttention: f32 and f64 only");
    return ATTNCHECK_UNSUPPORTED;  // skipped by attncheck, not failed
  }

 private:
  static bool causal_allows(const attncheck_call& c, int64_t i, int64_t j) {
    if (c.causal == ATTNCHECK_CAUSAL_TOP_LEFT) return j <= i;
    if (c.causal == ATTNCHECK_CAUSAL_BOTTOM_RIGHT) return j <= i + c.kv_len - c.q_len;
    return true;
  }

  template <class T>
  int run(const attncheck_call& c) {
    const T* q = static_cast<const T*>(c.q);  // [batch][heads][q_len][head_dim]
    const T* k = static_cast<const T*>(c.k);  // [batch][heads][kv_len][head_dim]
    const T* v = static_cast<const T*>(c.v);  // [batch][heads][kv_len][value_dim]
    T* out = static_cast<T*>(c.out);          // [batch][heads][q_len][value_dim]
    const double scale = !std::isnan(c.scale) ? c.scale : scale_logits_ ? 1 / std::sqrt(double(c.head_dim)) : 1.0;
    logits_.resize(static_cast<size_t>(c.kv_len));
    for (int64_t bh = 0; bh < c.batch * c.heads; ++bh)
      for (int64_t i = 0; i < c.q_len; ++i) {
        auto visible = [&](int64_t j) {
          return causal_allows(c, i, j) && (!c.mask || c.mask[(bh * c.q_len + i) * c.kv_len + j]);
        };
        const T* qi = q + (bh * c.q_len + i) * c.head_dim;
        double max_logit = -INFINITY;
        for (int64_t j = 0; j < c.kv_len; ++j) {
          if (!visible(j)) continue;
          double dot = 0;
          for (int64_t d = 0; d < c.head_dim; ++d) dot += double(qi[d]) * k[(bh * c.kv_len + j) * c.head_dim + d];
          logits_[j] = scale * dot;
          max_logit = std::max(max_logit, logits_[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < c.kv_len; ++j)
          if (visible(j)) sum += logits_[j] = std::exp(logits_[j] - max_logit);  // <= 1: no overflow
        T* oi = out + (bh * c.q_len + i) * c.value_dim;
        for (int64_t col = 0; col < c.value_dim; ++col) {
          double acc = 0;
          for (int64_t j = 0; j < c.kv_len; ++j)
            if (visible(j)) acc += logits_[j] / sum * v[(bh * c.kv_len + j) * c.value_dim + col];
          oi[col] = static_cast<T>(sum > 0 ? acc : 0);  // a row that sees no key: zeros
        }
      }
    return ATTNCHECK_OK;
  }

  bool scale_logits_;
  std::vector<double> logits_;  // one row's logits, then its unnormalised weights
};
