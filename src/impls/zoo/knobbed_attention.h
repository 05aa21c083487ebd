// Softmax attention with knobs, each knob one of the zoo's faults. Every zoo
// member that is "attention with one thing wrong" is this loop with one knob
// turned, so the members differ from correct attention in exactly their fault
// and nowhere else. With the default Knobs it is correct attention. The
// references (reference, naive, online) deliberately do not use it.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "impls/typed_call.h"

namespace attncheck::detail {

enum class ScaleRule {
  abi,               // NaN -> 1/sqrt(head_dim), else the given scale (correct)
  one,               // always 1: the logits are never scaled
  inverse_head_dim,  // NaN -> 1/head_dim, else the given scale
};

struct Knobs {
  ScaleRule scale_rule = ScaleRule::abi;
  bool subtract_max = true;       // false: exp of the raw logits, which overflows for large ones
  int64_t extra_causal_keys = 0;  // under a causal rule, each query also sees this many further keys
  bool drop_last_key = false;     // the key loop stops before key kv_len - 1
  bool swap_kv = false;           // logits from V rows, output from K rows (needs head_dim == value_dim)
  // A key's weight is exp(s - max) only when its score compares > -inf (the
  // test of a kernel that masks by adding -inf), else 0; the max skips it too.
  // A NaN score compares false: its key is dropped as if masked, and the row's
  // other keys share its weight. A row whose every score is NaN still gets
  // NaN (0 / 0).
  bool nan_score_drops_key = false;
};

template <class T>
T knobbed_scale(const TypedCall<T>& c, ScaleRule rule) {
  const double d = static_cast<double>(c.head_dim);
  switch (rule) {
    case ScaleRule::one: return T(1);
    case ScaleRule::inverse_head_dim: return static_cast<T>(std::isnan(c.scale) ? 1.0 / d : c.scale);
    case ScaleRule::abi: break;
  }
  return c.abi_scale();
}

// One query row at a time, arithmetic in T: logits, softmax over the visible
// keys, weighted sum of value rows. Rows that see no key get zeros.
template <class T>
void knobbed_attention(const TypedCall<T>& c, const Knobs& knobs) {
  const T scale = knobbed_scale(c, knobs.scale_rule);
  const int64_t keys = knobs.drop_last_key ? c.kv_len - 1 : c.kv_len;
  // Which tensor plays the key and which the value; with swap_kv both rows are
  // head_dim == value_dim wide, so the widths below hold either way.
  const int64_t key_width = c.head_dim, value_width = c.value_dim;
  std::vector<T> weight(c.kv_len);
  std::vector<char> sees(c.kv_len);

  for (int64_t bh = 0; bh < c.heads_total(); ++bh) {
    const T* key_rows = knobs.swap_kv ? c.v_head(bh) : c.k_head(bh);    // [kv_len][key_width]
    const T* value_rows = knobs.swap_kv ? c.k_head(bh) : c.v_head(bh);  // [kv_len][value_width]
    for (int64_t i = 0; i < c.q_len; ++i) {
      const T* q = c.q_head(bh) + i * c.head_dim;  // [head_dim]
      T* out = c.out_head(bh) + i * c.value_dim;    // [value_dim]
      const int64_t causal_end = causal_key_end(c.causal, c.q_len, c.kv_len, i) +
                                 (c.causal == ATTNCHECK_CAUSAL_NONE ? 0 : knobs.extra_causal_keys);
      const uint8_t* mask = c.mask_head(bh) ? c.mask_head(bh) + i * c.kv_len : nullptr;  // [kv_len]

      bool sees_any = false;
      T shift = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < keys; ++j) {
        sees[j] = j < causal_end && (!mask || mask[j] != 0);
        if (!sees[j]) continue;
        sees_any = true;
        T dot = 0;
        for (int64_t d = 0; d < key_width; ++d) dot += q[d] * key_rows[j * key_width + d];
        weight[j] = scale * dot;
        if (knobs.nan_score_drops_key && !(weight[j] > -std::numeric_limits<T>::infinity())) {
          sees[j] = 0;  // its weight below is 0, as a masked key's
          continue;
        }
        if (weight[j] > shift) shift = weight[j];
      }
      if (!knobs.subtract_max) shift = 0;

      for (int64_t col = 0; col < c.value_dim; ++col) out[col] = 0;
      if (!sees_any) continue;
      T sum = 0;
      for (int64_t j = 0; j < keys; ++j) {
        weight[j] = sees[j] ? std::exp(weight[j] - shift) : T(0);
        sum += weight[j];
      }
      for (int64_t j = 0; j < keys; ++j) {
        const T w = weight[j] / sum;
        for (int64_t col = 0; col < value_width; ++col) out[col] += w * value_rows[j * value_width + col];
      }
    }
  }
}

// The whole forward function of a knobbed zoo member.
inline int knobbed_forward(const attncheck_call* call, char* err, std::size_t err_len, const Knobs& knobs) {
  return dispatch(call, err, err_len, [&knobs](const auto& c) { knobbed_attention(c, knobs); });
}

}  // namespace attncheck::detail
