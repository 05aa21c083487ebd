// `reference`: attention as the textbook writes it, one head at a time with
// whole matrices: S = scale * Q K^T, invisible entries -inf, row softmax, O = P V.
// Clarity first; Eigen supplies the speed of the two matrix products.
#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include "impls/kernels.h"
#include "impls/typed_call.h"

namespace attncheck {
namespace {

template <class T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class T>
void reference_attention(const TypedCall<T>& c) {
  const T scale = c.abi_scale();
  const T minus_inf = -std::numeric_limits<T>::infinity();
  RowMajor<T> scores(c.q_len, c.kv_len);  // S, then P in place
  std::vector<int64_t> blind_rows;         // rows that see no key
  for (int64_t bh = 0; bh < c.heads_total(); ++bh) {
    const Eigen::Map<const RowMajor<T>> q(c.q_head(bh), c.q_len, c.head_dim);   // [q_len][head_dim]
    const Eigen::Map<const RowMajor<T>> k(c.k_head(bh), c.kv_len, c.head_dim);  // [kv_len][head_dim]
    const Eigen::Map<const RowMajor<T>> v(c.v_head(bh), c.kv_len, c.value_dim); // [kv_len][value_dim]
    Eigen::Map<RowMajor<T>> out(c.out_head(bh), c.q_len, c.value_dim);         // [q_len][value_dim]

    scores.noalias() = q * k.transpose();
    scores *= scale;
    blind_rows.clear();
    for (int64_t i = 0; i < c.q_len; ++i) {
      bool sees_any = false;
      for (int64_t j = 0; j < c.kv_len; ++j) {
        if (visible(c, bh, i, j))
          sees_any = true;
        else
          scores(i, j) = minus_inf;
      }
      auto row = scores.row(i);
      if (!sees_any) {  // softmax over nothing: the ABI asks for a zero row
        row.setZero();
        blind_rows.push_back(i);
        continue;
      }
      // Subtracting the row max keeps exp() <= 1: no overflow, and the largest
      // weight is exactly exp(0) = 1, so the sum is >= 1 (no division by ~0).
      const T row_max = row.maxCoeff();
      // std::exp, not Eigen's vectorised .exp(): Eigen 3.4 clamps the argument
      // and returns a subnormal (~3e-39 in float) for exp(-inf), which would give
      // invisible keys a tiny weight (and slow the product below ~100x).
      row = row.unaryExpr([row_max](T s) { return std::exp(s - row_max); });
      row /= row.sum();
    }
    out.noalias() = scores * v;
    // 0 * negative V gives -0 in the product; write the ABI's zeros as +0.
    for (int64_t i : blind_rows) out.row(i).setZero();
  }
}

}  // namespace

int reference_forward(const attncheck_call* call, char* err, size_t err_len) {
  return dispatch(call, err, err_len, [](const auto& c) { reference_attention(c); });
}

}  // namespace attncheck
