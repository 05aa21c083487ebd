#include "law_framework/batch_composition.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "law_framework/law_support.h"
#include "problem/dtype.h"
#include "problem/number_text.h"

namespace attncheck {

namespace {

// Elements of one batch entry of a mask or bias stored with `how`.
int64_t composition_broadcast_entry(const Shape& s, const Broadcast& how) {
  return (how.per_head ? s.heads : 1) * (how.per_row ? s.q_len : 1) * s.kv_len;
}

template <class V>
void composition_append_entry(V& to, const V& from, int64_t size, int64_t b) {
  to.insert(to.end(), from.begin() + b * size, from.begin() + (b + 1) * size);
}

double composition_largest_magnitude(const std::vector<double>& xs) {
  double m = 0;
  for (double x : xs)
    if (std::isfinite(x)) m = std::max(m, std::abs(x));
  return m;
}

// A loud neighbour: every q element c, every k element c signed as the scale,
// v as `base`'s: each logit it sees is |scale| c^2 head_dim.
Problem composition_loud_neighbour(const Problem& base, double c) {
  Problem r = base;
  std::fill(r.q.begin(), r.q.end(), c);
  std::fill(r.k.begin(), r.k.end(), base.effective_scale() < 0 ? -c : c);
  return r;
}

// A neighbour of other values: base with q and v negated and each kv head's
// keys moved one place (key j takes key j + 1's row, among the keys that are
// not padding), all exact; padding stays where it was.
Problem composition_other_neighbour(const Problem& base) {
  Problem r = base;
  const Shape& s = base.shape;
  for (double& x : r.q) x = -x;
  for (double& x : r.v) x = -x;
  const int64_t keys = base.kv_len_of(0);
  for (int64_t h = 0; h < s.kv_head_count() && keys > 1; ++h)
    std::rotate(r.k.begin() + r.k_at(h, 0, 0), r.k.begin() + r.k_at(h, 1, 0), r.k.begin() + r.k_at(h, keys, 0));
  return r;
}

// A shorter neighbour (ABI v2 lengths): base with fewer rows and keys, its
// padding rows and keys holding the loud value c.
Problem composition_shorter_neighbour(const Problem& base, uint64_t salt, double c) {
  Problem r = base;
  const Shape& s = base.shape;
  const int64_t q_len = 1 + static_cast<int64_t>(salt % static_cast<uint64_t>(s.q_len));
  const int64_t kv_len = static_cast<int64_t>((salt >> 16) % static_cast<uint64_t>(s.kv_len + 1));
  r.q_lens = {static_cast<int32_t>(std::min(q_len, base.q_len_of(0)))};
  r.kv_lens = {static_cast<int32_t>(std::min(kv_len, base.kv_len_of(0)))};
  for (int64_t h = 0; h < s.heads; ++h)
    for (int64_t i = r.q_lens[0]; i < s.q_len; ++i) std::fill_n(r.q.begin() + r.q_at(h, i, 0), s.head_dim, c);
  for (int64_t h = 0; h < s.kv_head_count(); ++h)
    for (int64_t j = r.kv_lens[0]; j < s.kv_len; ++j) {
      std::fill_n(r.k.begin() + r.k_at(h, j, 0), s.head_dim, c);
      std::fill_n(r.v.begin() + r.v_at(h, j, 0), s.value_dim, c);
    }
  return r;
}

}  // namespace

// Batch entry b of p as a batch-1 problem with p's extents: q, k, v, its mask
// and bias (broadcast kept), its lengths.
Problem entry_alone(const Problem& p, int64_t b) {
  const Shape& s = p.shape;
  Problem r = p;
  r.shape.batch = 1;
  r.q.clear(), r.k.clear(), r.v.clear();
  composition_append_entry(r.q, p.q, s.heads * s.q_len * s.head_dim, b);
  composition_append_entry(r.k, p.k, s.kv_head_count() * s.kv_len * s.head_dim, b);
  composition_append_entry(r.v, p.v, s.kv_head_count() * s.kv_len * s.value_dim, b);
  if (p.has_mask() && p.mask_broadcast.per_batch) {
    r.mask.clear();
    composition_append_entry(r.mask, p.mask, composition_broadcast_entry(s, p.mask_broadcast), b);
  }
  if (p.has_bias() && p.bias_broadcast.per_batch) {
    r.bias.clear();
    composition_append_entry(r.bias, p.bias, composition_broadcast_entry(s, p.bias_broadcast), b);
  }
  if (!p.q_lens.empty()) r.q_lens = {p.q_lens[b]};
  if (!p.kv_lens.empty()) r.kv_lens = {p.kv_lens[b]};
  r.dout.clear();
  return r;
}

// The batch-1 problems `parts` (same extents and features but for lengths) as
// one batch, in order. A mask or bias broadcast over the batch is the same in
// every part and stays broadcast; lengths are written out for every part when
// any part has them.
Problem composed_batch(const std::vector<Problem>& parts) {
  Problem r = parts.front();
  r.shape.batch = static_cast<int64_t>(parts.size());
  bool q_lens = false, kv_lens = false;
  for (const Problem& part : parts) q_lens = q_lens || !part.q_lens.empty(), kv_lens = kv_lens || !part.kv_lens.empty();
  r.q.clear(), r.k.clear(), r.v.clear(), r.q_lens.clear(), r.kv_lens.clear();
  if (r.mask_broadcast.per_batch) r.mask.clear();
  if (r.bias_broadcast.per_batch) r.bias.clear();
  for (const Problem& part : parts) {
    r.q.insert(r.q.end(), part.q.begin(), part.q.end());
    r.k.insert(r.k.end(), part.k.begin(), part.k.end());
    r.v.insert(r.v.end(), part.v.begin(), part.v.end());
    if (part.has_mask() && r.mask_broadcast.per_batch) r.mask.insert(r.mask.end(), part.mask.begin(), part.mask.end());
    if (part.has_bias() && r.bias_broadcast.per_batch) r.bias.insert(r.bias.end(), part.bias.begin(), part.bias.end());
    if (q_lens) r.q_lens.push_back(static_cast<int32_t>(part.q_len_of(0)));
    if (kv_lens) r.kv_lens.push_back(static_cast<int32_t>(part.kv_len_of(0)));
  }
  return r;
}

// A power of two c such that q = c and k = c (signed as the scale) give every
// logit |scale| c^2 head_dim, at least 2048 plus twice the largest logit the
// case's own q, k and bias can make: a max shared with such a neighbour leaves
// exp(z - max) of the case's rows below every dtype's smallest value. Capped
// so that the neighbour's logits stay within a quarter of the dtype's range
// (the oracle's representable domain for 16-bit dtypes); 1 when the case's
// own values leave no room.
double loud_value(const Problem& p) {
  const double scale = std::abs(p.effective_scale()), d = static_cast<double>(p.shape.head_dim);
  const double own = scale * composition_largest_magnitude(p.q) * composition_largest_magnitude(p.k) * d + composition_largest_magnitude(p.bias) +
                     composition_largest_magnitude(p.sinks);
  const double limit = max_finite(p.dtype) / 4;
  if (!(scale > 0) || !std::isfinite(own) || !(2 * own + 2048 < limit)) return 1;
  double c = std::exp2(std::ceil(std::log2(std::sqrt((2 * own + 2048) / (scale * d)))));
  if (!std::isfinite(c)) return 1;  // a scale so small that no value of the dtype makes a loud logit
  while (c > 1 && (c * c * scale * d > limit || c > limit)) c /= 2;
  return c;
}

// The companions of the case's sequences `alone`: one loud neighbour always;
// then, up to `target` sequences in all, cycling over the case's sequences:
// of other values, loud, shorter (when the implementation has lengths).
std::vector<Problem> companions(const std::vector<Problem>& alone, double loud, bool lengths, uint64_t salt,
                                int64_t target) {
  std::vector<Problem> out{composition_loud_neighbour(alone.back(), loud)};
  const int64_t kinds = lengths ? 3 : 2;
  for (int64_t k = 0; static_cast<int64_t>(alone.size() + out.size()) < target; ++k) {
    const Problem& base = alone[static_cast<std::size_t>(k) % alone.size()];
    switch (k % kinds) {
      case 0: out.push_back(composition_other_neighbour(base)); break;
      case 1: out.push_back(composition_loud_neighbour(base, loud)); break;
      default: out.push_back(composition_shorter_neighbour(base, salt * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(k), loud));
    }
  }
  return out;
}

// The parts as one batch, part n at position order[n] (so at[b] is where the
// case's sequence b landed).
Problem placed_batch(const std::vector<Problem>& parts, const std::vector<int64_t>& order, std::vector<int64_t>& at) {
  std::vector<Problem> placed(parts.size());
  at.assign(parts.size(), 0);
  for (std::size_t n = 0; n < parts.size(); ++n) {
    placed[static_cast<std::size_t>(order[n])] = parts[n];
    at[n] = order[n];
  }
  return composed_batch(placed);
}

// Compares sequence `alone` with entry `at` of `composed`: the outputs within
// twice the alone call's bound (the rows are the same rows, so the composed
// call's bound for them is the same), the lse where requested; bit for bit when
// `bitwise`. Counts the judged elements; the message of the first difference.
std::optional<std::string> entry_mismatch(const Problem& composed, const Outcome& whole, int64_t at,
                                          const Problem& alone, const Outcome& one, const OracleResult* one_o,
                                          int64_t& judged) {
  const bool bitwise = one_o == nullptr;
  const Shape& s = alone.shape;
  const int64_t rows = alone.q_len_of(0);
  for (int64_t h = 0; h < s.heads; ++h)
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t c = 0; c < s.value_dim; ++c) {
        const int64_t k = composed.out_at(at * s.heads + h, i, c), k1 = alone.out_at(h, i, c);
        const double x = whole.out[k], y = one.out[k1], tol = bitwise ? 0.0 : 2 * one_o->bound[k1];
        if (std::isfinite(tol)) ++judged;
        if (bitwise ? (std::isnan(x) && std::isnan(y)) || x == y : !std::isfinite(tol) || x == y || std::abs(x - y) <= tol)
          continue;
        std::ostringstream os;
        os << "at " << output_element(alone, k1) << ": "
           << compared_values("in the composed batch", x, "alone", y, alone.dtype, bitwise ? 0.0 : tol);
        return os.str();
      }
      if (!alone.lse_requested || one.lse.empty() || whole.lse.empty()) continue;
      const double x = whole.lse[(at * s.heads + h) * composed.shape.q_len + i], y = one.lse[h * s.q_len + i];
      const double tol = bitwise ? 0.0 : 2 * one_o->lse_bound[h * s.q_len + i];
      if (bitwise ? (std::isnan(x) && std::isnan(y)) || x == y : !std::isfinite(tol) || x == y || std::abs(x - y) <= tol)
        continue;
      std::ostringstream os;
      os << "lse of " << output_row(alone, h, i) << ": "
         << compared_values("in the composed batch", x, "alone", y, alone.dtype, bitwise ? 0.0 : tol);
      return os.str();
    }
  return std::nullopt;
}


}  // namespace attncheck
