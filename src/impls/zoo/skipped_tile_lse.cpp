// Zoo (ABI v2): a block-sparse tiled kernel whose lse goes wrong when the
// first key tile of a query block's range is skipped.
//
// A block of kBlockRows query rows walks its range (the union of its rows'
// ranges by length, causal rule and window) in tiles of kKeyTile keys from the
// range's first key, and skips without loading every tile that no row of the
// block sees (mask or -inf bias): the block-sparse skipping of FlexAttention
// and of kernels given a block mask. Output and row sums are the streaming
// softmax, right. The lse is kept per row as it goes, merged tile by tile
// (lse = logaddexp(lse, m_t + log l_t), in long double), and the fault is its
// start: the first tile of the range *assigns* it (lse = m_t + log l_t) while
// the register starts at 0, as the accumulators do. When that tile is skipped,
// the first processed tile merges into 0: the lse becomes
// log(1 + sum_j exp(z_j)), one extra term exp(0), while the output, normalised
// by the running sum, stays right.
//
// Only split_consistency catches it in the default catalogue: its contiguous
// split's part B hides keys [0, t) of every row, t a multiple of kKeyTile on
// rows longer than a tile, and its runs hide leading tiles; the drawn masks
// hide a block's whole first tile rarely (a masked block starting at the
// range's first key, or a sparse random mask, over every row of the block),
// and lse_matches_oracle is the only other law that reads the lse. A row whose
// sum exp(z_j) is large makes the extra term small: log(1 + e^-L) within the
// bound once L passes about 15 (f32).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "impls/kernels.h"
#include "impls/typed_call_v2.h"

namespace attncheck {

namespace {

constexpr int64_t kKeyTile = 16;   // keys per tile
constexpr int64_t kBlockRows = 16;  // query rows per block

long double log_add_exp(long double x, long double y) {
  if (x == -std::numeric_limits<long double>::infinity()) return y;
  if (y == -std::numeric_limits<long double>::infinity()) return x;
  return std::max(x, y) + std::log1p(std::exp(-std::fabs(x - y)));
}

template <class T>
void skipped_tile_lse_attention(const TypedCallV2<T>& c) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const T scale = c.abi_scale();
  const T cap = static_cast<T>(c.softcap);
  const int64_t dv = c.value_dim;
  std::vector<T> z(kBlockRows * kKeyTile);  // [kBlockRows][kKeyTile] the tile's logits, -inf where not seen
  std::vector<T> m(kBlockRows), l(kBlockRows), acc(kBlockRows * dv);  // running max, sum, [rows][value_dim]
  std::vector<long double> lse(kBlockRows);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t kvh = c.kv_head_of(h);
      const T slope = c.alibi_slopes ? static_cast<T>(c.alibi_slopes[h]) : T(0);
      for (int64_t i0 = 0; i0 < c.q_len_of(b); i0 += kBlockRows) {
        const int64_t rows = std::min(kBlockRows, c.q_len_of(b) - i0);
        KeyRange range{std::numeric_limits<int64_t>::max(), 0};
        for (int64_t r = 0; r < rows; ++r) {
          const KeyRange kr = c.key_range(b, i0 + r);
          if (kr.empty()) continue;
          range.begin = std::min(range.begin, kr.begin);
          range.end = std::max(range.end, kr.end);
        }
        std::fill(m.begin(), m.end(), kNegInf);
        std::fill(l.begin(), l.end(), T(0));
        std::fill(acc.begin(), acc.end(), T(0));
        std::fill(lse.begin(), lse.end(), 0.0L);  // zero-initialised, as the accumulators
        const int64_t first_tile = range.empty() ? range.end : range.begin;  // tiles from the range's first key
        for (int64_t j0 = first_tile; j0 < range.end; j0 += kKeyTile) {
          const int64_t keys = std::min(kKeyTile, range.end - j0);
          bool any = false;
          for (int64_t r = 0; r < rows; ++r) {
            const T* q = c.q.row(b, h, i0 + r);  // [head_dim]
            const int64_t diag = c.diagonal(b, i0 + r);
            for (int64_t jj = 0; jj < keys; ++jj) {
              const int64_t j = j0 + jj;
              T& logit = z[r * kKeyTile + jj];
              logit = kNegInf;
              if (!c.visible(b, h, i0 + r, j)) continue;
              any = true;
              const T* k = c.k.row(b, kvh, j);  // [head_dim]
              T dot = 0;
              for (int64_t d = 0; d < c.head_dim; ++d) dot += q[d] * k[d];
              T s = scale * dot;
              if (c.softcap > 0) s = cap * std::tanh(s / cap);
              if (c.bias) s += c.bias(b, h, i0 + r, j);
              if (c.alibi_slopes) s -= slope * static_cast<T>(diag > j ? diag - j : j - diag);
              logit = s;
            }
          }
          if (!any) continue;  // block-sparse: no row of the block sees the tile, it is never loaded
          for (int64_t r = 0; r < rows; ++r) {
            const T* zr = &z[r * kKeyTile];
            T top = kNegInf;
            for (int64_t jj = 0; jj < keys; ++jj) top = std::max(top, zr[jj]);
            long double tile_lse = -std::numeric_limits<long double>::infinity();
            if (top != kNegInf) {
              const T m_new = std::max(m[r], top);
              const T alpha = std::exp(m[r] - m_new);  // 0 on the row's first visible tile
              T* a = &acc[r * dv];
              for (int64_t col = 0; col < dv; ++col) a[col] *= alpha;
              T sum = 0, tile_sum = 0;
              for (int64_t jj = 0; jj < keys; ++jj) {
                if (zr[jj] == kNegInf) continue;
                const T w = std::exp(zr[jj] - m_new);
                sum += w;
                tile_sum += std::exp(zr[jj] - top);
                const T* v = c.v.row(b, kvh, j0 + jj);  // [value_dim]
                for (int64_t col = 0; col < dv; ++col) a[col] += w * v[col];
              }
              l[r] = l[r] * alpha + sum;
              m[r] = m_new;
              tile_lse = static_cast<long double>(top) + std::log(static_cast<long double>(tile_sum));
            }
            // The fault: the range's first tile assigns the lse, any later one
            // merges into it; a skipped first tile leaves the register at 0.
            lse[r] = j0 == first_tile ? tile_lse : log_add_exp(lse[r], tile_lse);
          }
        }
        float* lse_out = c.lse_row(b, h);
        const T sink = c.sink_of(h);
        for (int64_t r = 0; r < rows; ++r) {
          T* out = c.out.row(b, h, i0 + r);  // [value_dim]
          if (m[r] == kNegInf) {  // the row sees no key: zeros, and the sink's logit (or -inf) as lse
            for (int64_t col = 0; col < dv; ++col) out[col] = 0;
            if (lse_out) lse_out[i0 + r] = static_cast<float>(sink);
            continue;
          }
          const T top = std::max(m[r], sink);
          const T shift = std::exp(m[r] - top);
          const T denominator = l[r] * shift + (c.sinks ? std::exp(sink - top) : T(0));
          for (int64_t col = 0; col < dv; ++col) out[col] = acc[r * dv + col] * shift / denominator;
          if (lse_out) lse_out[i0 + r] = static_cast<float>(log_add_exp(lse[r], static_cast<long double>(sink)));
        }
      }
    }
}

}  // namespace

int skipped_tile_lse_forward_v2(const attncheck_call_v2* call, char* err, size_t err_len) {
  return dispatch_v2(call, err, err_len, [](const auto& c) { skipped_tile_lse_attention(c); });
}

int skipped_tile_lse_forward(const attncheck_call* call, char* err, size_t err_len) {
  return forward_v1_via_v2(call, err, err_len, skipped_tile_lse_forward_v2);
}

}  // namespace attncheck
