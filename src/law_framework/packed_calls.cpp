#include "law_framework/packed_calls.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>

#include "law_framework/law_support.h"
#include "problem/feature_transforms.h"

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

std::optional<std::string> rows_differ(const PackedSide& a, const PackedSide& b, const std::vector<int64_t>& map_b,
                                       bool bit_for_bit) {
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
             << (bit_for_bit ? ", not bit for bit though the implementation reruns the case bit for bit" : "");
          return os.str();
        }
        if (!lse) continue;
        const int64_t ra = (ba * heads + h) * pa.shape.q_len + i, rb = (bb * heads + h) * b.problem.shape.q_len + i;
        const double x = a.outcome.lse[ra], y = b.outcome.lse[rb];
        if (!differ(x, y, a.oracle.lse_bound[ra] + b.oracle.lse_bound[rb])) continue;
        os << "lse of sequence " << ba << " at " << output_row(pa, ba * heads + h, i) << ": " << num(x) << " " << a.name
           << " against " << num(y) << " " << b.name << " (sequence " << bb << " there)";
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
