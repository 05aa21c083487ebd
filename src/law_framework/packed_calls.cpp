#include "law_framework/packed_calls.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "law_framework/law_support.h"
#include "problem/feature_transforms.h"
#include "problem/kv_format.h"

namespace attncheck {

Problem padded_twin(const Problem& p) {
  Problem r = p;
  if (p.packed_q() && r.q_lens.empty())
    for (int64_t b = 0; b < p.shape.batch; ++b) r.q_lens.push_back(static_cast<int32_t>(p.q_slot_of(b)));
  if (p.packed_k() && r.kv_lens.empty())
    for (int64_t b = 0; b < p.shape.batch; ++b) r.kv_lens.push_back(static_cast<int32_t>(p.kv_slot_of(b)));
  r.cu_seqlens_q.clear(), r.cu_seqlens_k.clear();
  r.total_q = r.total_k = 0;
  return r;
}

Problem with_slack_refilled(const Problem& p, int64_t extra, double fill) {
  Problem r = with_padding_filled(p, fill);
  if (r.packed_q()) r.total_q += extra;
  if (r.packed_k()) r.total_k += extra;
  return r;
}

namespace {

// Removes batch entry e of a [batch][...] tensor stored `per_batch` (else keeps it).
template <class T>
void erase_entry(std::vector<T>& t, int64_t batch, int64_t e, bool per_batch = true) {
  if (t.empty() || !per_batch) return;
  const std::size_t slice = t.size() / static_cast<std::size_t>(batch);
  t.erase(t.begin() + static_cast<std::ptrdiff_t>(slice * e), t.begin() + static_cast<std::ptrdiff_t>(slice * (e + 1)));
}

// A packed side's prefix sums without sequence e, the slack kept.
void erase_slot(std::vector<int32_t>& cu, int64_t& total, int64_t e) {
  if (cu.empty()) return;
  const int64_t slack = total - cu.back(), n = cu[e + 1] - cu[e];
  cu.erase(cu.begin() + e + 1);
  for (std::size_t b = static_cast<std::size_t>(e) + 1; b < cu.size(); ++b) cu[b] -= static_cast<int32_t>(n);
  total = std::max<int64_t>(1, cu.back() + slack);
}

bool packed_same_bits(double x, double y) { return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y); }

}  // namespace

std::optional<Problem> without_sequence(const Problem& p, int64_t e) {
  const int64_t batch = p.shape.batch;
  if (batch < 2) return std::nullopt;
  Problem r = p;
  r.shape.batch = batch - 1;
  erase_entry(r.q, batch, e), erase_entry(r.k, batch, e), erase_entry(r.v, batch, e);
  erase_entry(r.mask, batch, e, p.mask_broadcast.per_batch);
  erase_entry(r.bias, batch, e, p.bias_broadcast.per_batch);
  erase_entry(r.q_lens, batch, e), erase_entry(r.kv_lens, batch, e);
  erase_slot(r.cu_seqlens_q, r.total_q, e);
  erase_slot(r.cu_seqlens_k, r.total_k, e);
  return r;
}

namespace {

// Batch entries of a [batch][...] tensor stored `per_batch` (else kept) in the
// order `order`: entry n of the result is entry order[n].
template <class T>
void reorder_entries(std::vector<T>& t, const std::vector<int64_t>& order, bool per_batch = true) {
  if (t.empty() || !per_batch) return;
  const std::size_t slice = t.size() / order.size();
  std::vector<T> r;
  r.reserve(t.size());
  for (int64_t from : order) {
    const auto first = t.begin() + static_cast<std::ptrdiff_t>(slice * static_cast<std::size_t>(from));
    r.insert(r.end(), first, first + static_cast<std::ptrdiff_t>(slice));
  }
  t = std::move(r);
}

// A packed side's prefix sums with its slots in the order `order`: the same
// cu[batch], so total and slack stay as they were.
void reorder_slots(std::vector<int32_t>& cu, const std::vector<int64_t>& order) {
  if (cu.empty()) return;
  std::vector<int32_t> r{0};
  for (int64_t from : order) r.push_back(r.back() + (cu[static_cast<std::size_t>(from) + 1] - cu[static_cast<std::size_t>(from)]));
  cu = std::move(r);
}

// A [outer][rows][cols] tensor as [outer][new_rows][new_cols] (each at least
// the old), every old element where it was, the new ones `fill`.
template <class T>
std::vector<T> grown_rows(const std::vector<T>& t, int64_t outer, int64_t rows, int64_t cols, int64_t new_rows,
                     int64_t new_cols, T fill) {
  if (t.empty()) return t;
  std::vector<T> r(static_cast<std::size_t>(outer * new_rows * new_cols), fill);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < rows; ++i)
      std::copy_n(t.begin() + (o * rows + i) * cols, cols, r.begin() + (o * new_rows + i) * new_cols);
  return r;
}

}  // namespace

Problem with_sequences_permuted(const Problem& p, const std::vector<int64_t>& order) {
  Problem r = p;
  reorder_entries(r.q, order), reorder_entries(r.k, order), reorder_entries(r.v, order), reorder_entries(r.dout, order);
  reorder_entries(r.mask, order, p.mask_broadcast.per_batch);
  reorder_entries(r.bias, order, p.bias_broadcast.per_batch);
  reorder_entries(r.q_lens, order), reorder_entries(r.kv_lens, order);
  reorder_slots(r.cu_seqlens_q, order), reorder_slots(r.cu_seqlens_k, order);
  reorder_entries(r.block_table, order);
  reorder_entries(r.alibi_slopes, order, p.alibi_batch_stride != 0);  // [batch][heads] under ALIBI_BATCH
  // Scales per batch entry: every d of a block format ([batch][kv_heads][kv_len][blocks]) and
  // the per-(batch, kv head) granularity ([batch][kv_heads]); the others are shared by all.
  const auto per_batch_scales = [](KvFormat f, ScaleGranularity g) {
    return info(f).block_scaled || (info(f).scaled && g == ScaleGranularity::per_batch_kv_head);
  };
  reorder_entries(r.k_scales, order, per_batch_scales(p.k_format, p.k_scale_granularity));
  reorder_entries(r.v_scales, order, per_batch_scales(p.v_format, p.v_scale_granularity));
  return r;
}

Problem with_bounds_raised(const Problem& p, int64_t more_q, int64_t more_k) {
  const Shape& s = p.shape;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Problem r = p;
  r.shape.q_len = s.q_len + more_q, r.shape.kv_len = s.kv_len + more_k;
  const int64_t q2 = r.shape.q_len, kv2 = r.shape.kv_len, kvh = s.kv_head_count();
  r.q = grown_rows(p.q, s.batch * s.heads, s.q_len, s.head_dim, q2, s.head_dim, nan);
  r.dout = grown_rows(p.dout, s.batch * s.heads, s.q_len, s.value_dim, q2, s.value_dim, nan);
  r.k = grown_rows(p.k, s.batch * kvh, s.kv_len, s.head_dim, kv2, s.head_dim, nan);
  r.v = grown_rows(p.v, s.batch * kvh, s.kv_len, s.value_dim, kv2, s.value_dim, nan);
  // mask and bias [batch][heads][q_len][kv_len] as their broadcasts store them.
  const auto grow_pairs = [&](const auto& t, const Broadcast& bc, auto fill) {
    const int64_t outer = (bc.per_batch ? s.batch : 1) * (bc.per_head ? s.heads : 1);
    return grown_rows(t, outer, bc.per_row ? s.q_len : 1, s.kv_len, bc.per_row ? q2 : 1, kv2, fill);
  };
  r.mask = grow_pairs(p.mask, p.mask_broadcast, uint8_t{1});
  r.bias = grow_pairs(p.bias, p.bias_broadcast, 0.0);
  return r;
}

std::optional<std::string> rows_differ(const PackedSide& a, const PackedSide& b, const std::vector<int64_t>& map_b,
                                       bool bit_for_bit, const char* why_bitwise) {
  const Problem& pa = a.problem;
  const int64_t heads = pa.shape.heads, cols = pa.shape.value_dim;
  const bool lse = !a.outcome.lse.empty() && !b.outcome.lse.empty();
  for (int64_t ba = 0; ba < pa.shape.batch; ++ba) {
    const int64_t bb = map_b[ba];
    if (bb < 0) continue;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < pa.q_len_of(ba); ++i) {
        auto differ = [&](double x, double y, double tol) {
          if (bit_for_bit) return !packed_same_bits(x, y) && !(std::isnan(x) && std::isnan(y));
          if (x == y || std::isinf(tol)) return false;
          return !(std::abs(x - y) <= tol);
        };
        std::ostringstream os;
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t ka = pa.out_at(ba * heads + h, i, c), kb = b.problem.out_at(bb * heads + h, i, c);
          const double x = a.outcome.out[ka], y = b.outcome.out[kb];
          if (!differ(x, y, a.oracle.bound[ka] + b.oracle.bound[kb])) continue;
          os << "out of sequence " << ba << " at " << output_element(pa, ka) << ": " << num(x) << " " << a.name
             << " against " << num(y) << " " << b.name << " (sequence " << bb << " there)"
             << (bit_for_bit ? std::string(", not bit for bit ") + why_bitwise
                 : std::isnan(x) && std::isnan(y) ? std::string(", NaN in both where the oracle has a number")
                                                  : std::string());
          return os.str();
        }
        if (!lse) continue;
        const int64_t ra = (ba * heads + h) * pa.shape.q_len + i, rb = (bb * heads + h) * b.problem.shape.q_len + i;
        const double x = a.outcome.lse[ra], y = b.outcome.lse[rb];
        if (!differ(x, y, a.oracle.lse_bound[ra] + b.oracle.lse_bound[rb])) continue;
        os << "lse of sequence " << ba << " at " << output_row(pa, ba * heads + h, i) << ": " << num(x) << " " << a.name
           << " against " << num(y) << " " << b.name << " (sequence " << bb << " there)"
           << (bit_for_bit ? std::string(", not bit for bit ") + why_bitwise : std::string());
        return os.str();
      }
  }
  return std::nullopt;
}

std::optional<Verdict> rerun_is_bitwise(Implementation& impl, const Problem& p, const Outcome& first, bool& bitwise) {
  const Outcome again = impl.run(p);
  if (auto bad = unusable(again)) return bad;
  auto same = [](const std::vector<double>& x, const std::vector<double>& y) {
    // An empty vector's data() may be null, which memcmp must not be given even for 0 bytes.
    return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0);
  };
  bitwise = same(first.out, again.out) && same(first.lse, again.lse);
  return std::nullopt;
}

}  // namespace attncheck
