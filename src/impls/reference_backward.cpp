// `reference`'s backward: the gradients of sum(out * dout) as the textbook
// writes them, one query head at a time with whole matrices (Eigen), P
// recomputed from scratch (call->lse is not used):
//   S  = scale Q K^T,  Z = softcap tanh(S / softcap) + bias - ALiBi, -inf where invisible
//   P  = softmax(Z) per row, exp(sink) in the denominator
//   dV = P^T dO                     dP = dO V^T
//   D  = rowsum(P * dP)             (= rowsum(dO * O) in exact arithmetic)
//   dS = P * (dP - D) * (1 - tanh^2(S / softcap))   (the last factor only with a soft-cap)
//   dQ = scale dS K                 dK = scale dS^T Q
// A kv head's dK and dV sum over the query heads of its group. Only the live
// rows (i < Lq) and keys (j < Lk) take part: padding is never read or written.
// The knobs (reference_backward.h) are the zoo's faults; all off here.
#include "impls/reference_backward.h"

#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include "impls/kernels.h"
#include "impls/typed_grad_v2.h"

namespace attncheck {
namespace {

using detail::BackwardKnobs;

template <class T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// Row-major matrices over a view's rows: the row stride is the view's stride[2].
template <class T>
using ConstRows = Eigen::Map<const RowMajor<T>, 0, Eigen::OuterStride<>>;
template <class T>
using Rows = Eigen::Map<RowMajor<T>, 0, Eigen::OuterStride<>>;

// Per (batch, query head): P, the soft-cap's slope and the blind rows.
template <class T>
struct Weights {
  RowMajor<T> p;           // [Lq][Lk] softmax weights, 0 where invisible
  RowMajor<T> unnormalised;  // [Lq][Lk] exp(z - rowmax) (only for the dv_unnormalised knob)
  RowMajor<T> cap_slope;   // [Lq][Lk] 1 - tanh^2(s / softcap) (only with a soft-cap)
  std::vector<char> blind;  // [Lq] the row sees no key
};

// Recomputes the forward's weights of (b, h) exactly as reference_forward_v2 does.
template <class T>
void recompute_weights(const TypedCallV2<T>& c, int64_t b, int64_t h, const BackwardKnobs& knobs, Weights<T>& w) {
  const int64_t rows = c.q_len_of(b), keys = c.kv_len_of(b);
  const int64_t kv_head = c.kv_head_of(h);
  const T scale = c.abi_scale();
  const T softcap = static_cast<T>(c.softcap);
  const T minus_inf = -std::numeric_limits<T>::infinity();
  const T sink = c.sink_of(h);
  const ConstRows<T> q(c.q.row(b, h, 0), rows, c.head_dim, Eigen::OuterStride<>(c.q.stride[2]));         // [Lq][head_dim]
  const ConstRows<T> k(c.k.row(b, kv_head, 0), keys, c.head_dim, Eigen::OuterStride<>(c.k.stride[2]));   // [Lk][head_dim]
  RowMajor<T>& s = w.p;
  s.resize(rows, keys);
  s.noalias() = q * k.transpose();
  s *= scale;
  if (c.softcap > 0) {
    // z = softcap tanh(s / softcap), dz/ds = 1 - tanh^2(s / softcap); std::tanh as forward uses it.
    w.cap_slope.resize(rows, keys);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < keys; ++j) {
        const T t = std::tanh(s(i, j) / softcap);
        s(i, j) = softcap * t;
        w.cap_slope(i, j) = T(1) - t * t;
      }
  }
  w.blind.assign(static_cast<std::size_t>(rows), 0);
  if (knobs.dv_unnormalised) w.unnormalised.resize(rows, keys);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t diag = c.diagonal(b, i);
    bool sees_any = false;
    for (int64_t j = 0; j < keys; ++j) {
      if (!c.visible(b, h, i, j)) {
        s(i, j) = minus_inf;
        continue;
      }
      sees_any = true;
      if (c.bias) s(i, j) += c.bias(b, h, i, j);
      if (c.alibi_slopes) s(i, j) -= static_cast<T>(c.slope(b, h)) * static_cast<T>(std::abs(diag - j));
    }
    auto row = s.row(i);
    if (!sees_any) {
      row.setZero();
      w.blind[i] = 1;
      if (knobs.dv_unnormalised) w.unnormalised.row(i).setZero();
      continue;
    }
    const T row_max = std::max(row.maxCoeff(), sink);
    row = row.unaryExpr([row_max](T z) { return std::exp(z - row_max); });  // std::exp: exp(-inf) is exactly 0
    if (knobs.dv_unnormalised) w.unnormalised.row(i) = row;
    row /= row.sum() + (c.sinks ? std::exp(sink - row_max) : T(0));
  }
}

template <class T>
void reference_gradients(const TypedCallV2<T>& c, const TypedGradV2<T>& g, const BackwardKnobs& knobs) {
  const T scale = c.abi_scale();
  const T dq_scale = knobs.dq_unscaled ? T(1) : scale;
  const T blind_dq = knobs.nan_empty_rows ? std::numeric_limits<T>::quiet_NaN() : T(0);
  Weights<T> w;
  RowMajor<T> dp;  // [Lq][Lk]: dO V^T, then dS in place
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t rows = c.q_len_of(b), keys = c.kv_len_of(b);
    for (int64_t kv_head = 0; kv_head < c.kv_heads; ++kv_head) {
      // The kv head's live keys, zeroed (overwrite semantics), then summed over its group.
      Rows<T> dk(g.dk.row(b, kv_head, 0), keys, c.head_dim, Eigen::OuterStride<>(g.dk.stride[2]));   // [Lk][head_dim]
      Rows<T> dv(g.dv.row(b, kv_head, 0), keys, c.value_dim, Eigen::OuterStride<>(g.dv.stride[2]));  // [Lk][value_dim]
      if (keys > 0) {
        if (!knobs.dk_accumulated) dk.setZero();
        dv.setZero();
      }
      for (int64_t h = kv_head * c.group(); h < (kv_head + 1) * c.group(); ++h) {
        if (rows == 0) continue;
        Rows<T> dq(g.dq.row(b, h, 0), rows, c.head_dim, Eigen::OuterStride<>(g.dq.stride[2]));  // [Lq][head_dim]
        if (keys == 0) {  // no key exists: every row is blind
          dq.setConstant(blind_dq);
          continue;
        }
        const ConstRows<T> q(c.q.row(b, h, 0), rows, c.head_dim, Eigen::OuterStride<>(c.q.stride[2]));
        const ConstRows<T> k(c.k.row(b, kv_head, 0), keys, c.head_dim, Eigen::OuterStride<>(c.k.stride[2]));
        const ConstRows<T> v(c.v.row(b, kv_head, 0), keys, c.value_dim, Eigen::OuterStride<>(c.v.stride[2]));
        const ConstRows<T> dout(g.dout.row(b, h, 0), rows, c.value_dim, Eigen::OuterStride<>(g.dout.stride[2]));
        recompute_weights(c, b, h, knobs, w);

        dp.resize(rows, keys);
        dp.noalias() = dout * v.transpose();
        for (int64_t i = 0; i < rows; ++i) {
          const T d_i = knobs.no_rowsum ? T(0) : w.p.row(i).dot(dp.row(i));
          dp.row(i) = (w.p.row(i).array() * (dp.row(i).array() - d_i)).matrix();
        }
        if (c.softcap > 0 && !knobs.softcap_derivative_dropped) dp = dp.cwiseProduct(w.cap_slope);
        const RowMajor<T>& ds = dp;

        dq.noalias() = ds * k;
        dq *= dq_scale;
        for (int64_t i = 0; i < rows; ++i)
          if (w.blind[i]) dq.row(i).setConstant(blind_dq);  // also turns -0 from 0 * negative K into +0
        if (knobs.gqa_first_head && h != kv_head * c.group()) continue;
        if (knobs.dk_rows_reversed)  // sum_i dS_ij q_i from the last row i to the first
          dk.noalias() += scale * (ds.colwise().reverse().transpose() * q.colwise().reverse());
        else
          dk.noalias() += scale * (ds.transpose() * q);
        dv.noalias() += (knobs.dv_unnormalised ? w.unnormalised : w.p).transpose() * dout;
      }
    }
  }
}

}  // namespace

namespace detail {

int reference_backward_with(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, std::size_t err_len,
                            const BackwardKnobs& knobs) {
  return dispatch_backward_v2(call, grad, err, err_len,
                              [&knobs](const auto& c, const auto& g) { reference_gradients(c, g, knobs); });
}

}  // namespace detail

int reference_backward_v2(const attncheck_call_v2* call, const attncheck_grad* grad, char* err, size_t err_len) {
  return detail::reference_backward_with(call, grad, err, err_len, {});
}

}  // namespace attncheck
