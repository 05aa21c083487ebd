// `reference`: attention as the textbook writes it, one head at a time with
// whole matrices: S = scale * Q K^T, soft-capped, plus bias and ALiBi,
// invisible entries -inf, row softmax (with the sink in the denominator),
// O = P V. Clarity first; Eigen supplies the speed of the two matrix products,
// reading Q, K, V and writing O in place through their row strides.
#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include "impls/kernels.h"
#include "impls/typed_call_v2.h"

namespace attncheck {
namespace {

template <class T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Row-major matrices over a view's rows: the row stride is the view's stride[2].
template <class T>
using ConstRows = Eigen::Map<const RowMajor<T>, 0, Eigen::OuterStride<>>;
template <class T>
using Rows = Eigen::Map<RowMajor<T>, 0, Eigen::OuterStride<>>;

template <class T>
void reference_attention(const TypedCallV2<T>& c) {
  const T scale = c.abi_scale();
  const T softcap = static_cast<T>(c.softcap);
  const T minus_inf = -std::numeric_limits<T>::infinity();
  RowMajor<T> scores;                // [Lq][Lk]: S, then P in place
  RowMajor<T> product;               // [Lq][value_dim]: P V, before it is copied to out
  std::vector<int64_t> blind_rows;   // rows that see no key
  for (int64_t b = 0; b < c.batch; ++b) {
    // Only the existing rows and keys take part: the matrices stop at Lq and Lk.
    const int64_t rows = c.q_len_of(b), keys = c.kv_len_of(b);
    if (rows == 0) continue;
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t kv_head = c.kv_head_of(h);
      const T sink = c.sink_of(h);
      float* lse = c.lse_row(b, h);  // [q_len] or nullptr
      Rows<T> out(c.out.row(b, h, 0), rows, c.value_dim, Eigen::OuterStride<>(c.out.stride[2]));  // [Lq][value_dim]
      if (keys == 0) {  // no key exists: every row is blind
        out.setZero();
        if (lse) std::fill(lse, lse + rows, static_cast<float>(sink));
        continue;
      }
      const ConstRows<T> q(c.q.row(b, h, 0), rows, c.head_dim, Eigen::OuterStride<>(c.q.stride[2]));         // [Lq][head_dim]
      const ConstRows<T> k(c.k.row(b, kv_head, 0), keys, c.head_dim, Eigen::OuterStride<>(c.k.stride[2]));   // [Lk][head_dim]
      const ConstRows<T> v(c.v.row(b, kv_head, 0), keys, c.value_dim, Eigen::OuterStride<>(c.v.stride[2]));  // [Lk][value_dim]

      scores.resize(rows, keys);
      scores.noalias() = q * k.transpose();
      scores *= scale;
      // std::tanh rather than Eigen's vectorised approximation: the soft-cap as the spec writes it.
      if (c.softcap > 0) scores = scores.unaryExpr([softcap](T z) { return softcap * std::tanh(z / softcap); });
      blind_rows.clear();
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t diag = c.diagonal(b, i);
        bool sees_any = false;
        for (int64_t j = 0; j < keys; ++j) {
          if (!c.visible(b, h, i, j)) {
            scores(i, j) = minus_inf;
            continue;
          }
          sees_any = true;
          if (c.bias) scores(i, j) += c.bias(b, h, i, j);
          if (c.alibi_slopes)
            scores(i, j) -= static_cast<T>(c.slope(b, h)) * static_cast<T>(std::abs(diag - j));
        }
        auto row = scores.row(i);
        if (!sees_any) {  // softmax over nothing: the ABI asks for a zero row, lse = the sink (or -inf)
          row.setZero();
          blind_rows.push_back(i);
          if (lse) lse[i] = static_cast<float>(sink);
          continue;
        }
        // Subtracting the row max (the sink included) keeps exp() <= 1: no
        // overflow, and the largest term of the denominator is exactly
        // exp(0) = 1, so it is >= 1 (no division by ~0).
        const T row_max = std::max(row.maxCoeff(), sink);
        // std::exp, not Eigen's vectorised .exp(): Eigen 3.4 clamps the argument
        // and returns a subnormal (~3e-39 in float) for exp(-inf), which would give
        // invisible keys a tiny weight (and slow the product below ~100x).
        row = row.unaryExpr([row_max](T s) { return std::exp(s - row_max); });
        // The sink weighs in the denominator only: it has no value row.
        const T denominator = row.sum() + (c.sinks ? std::exp(sink - row_max) : T(0));
        row /= denominator;
        if (lse) lse[i] = static_cast<float>(row_max + std::log(denominator));
      }
      // O = P V into our own dense [Lq][value_dim] matrix, then copied: Eigen
      // computes a small product's columns by packets (acc = 0, acc += p v:
      // a lone -0 term gives +0) or one by one (the sum of the terms: -0),
      // split by where the destination's rows lie against 16 bytes. Written in
      // place through out's strides, the sign of a zero followed the buffer's
      // address (a packed out's rows are heads * value_dim apart, a padded
      // out's value_dim): the promise forbids that.
      product.noalias() = scores * v;
      out = product;
      // 0 * negative V gives -0 in the product; write the ABI's zeros as +0.
      for (int64_t i : blind_rows) out.row(i).setZero();
    }
  }
}

}  // namespace

int reference_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return dispatch_v2(call, err, err_len, [](const auto& c) { reference_attention(c); });
}

int reference_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  return dispatch_v3(call, err, err_len, [](const auto& c) { reference_attention(c); });
}

int reference_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, reference_forward_v2);
}

}  // namespace attncheck
