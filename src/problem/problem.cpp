#include "problem/problem.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "problem/kv_broadcast.h"
#include "problem/kv_storage.h"
#include "problem/kv_numerics.h"
#include "problem/number_text.h"
#include "problem/paging.h"
#include "problem/problem_fields.h"

namespace attncheck {

namespace {

// Doubles (alone or in a tensor) by their bits; everything else by its own ==.
template <class T>
bool same_value(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
  } else {
    return a == b;
  }
}

}  // namespace

bool Shape::operator==(const Shape& o) const {
  bool same = true;
  for_each_field<Shape>(
      [&](const auto& f, int64_t a, int64_t b) {
        if constexpr (same_member<std::remove_cvref_t<decltype(f)>::member, &Shape::kv_heads>())
          same = same && kv_head_count() == o.kv_head_count();
        else
          same = same && a == b;
      },
      *this, o);
  return same;
}

bool Problem::operator==(const Problem& o) const {
  bool same = true;
  for_each_field<Problem>([&](const auto&, const auto& a, const auto& b) { same = same && same_value(a, b); }, *this, o);
  return same;
}

std::string_view causal_name(Causal c) {
  switch (c) {
    case Causal::none: return "none";
    case Causal::top_left: return "top_left";
    case Causal::bottom_right: return "bottom_right";
  }
  return "?";
}

std::string_view feature_name(FeatureBits one_bit) {
  switch (one_bit) {
    case ATTNCHECK_FEATURE_MASK: return "mask";
    case ATTNCHECK_FEATURE_CAUSAL: return "causal";
    case ATTNCHECK_FEATURE_GQA: return "gqa";
    case ATTNCHECK_FEATURE_STRIDES: return "strides";
    case ATTNCHECK_FEATURE_LENGTHS: return "lengths";
    case ATTNCHECK_FEATURE_WINDOW: return "window";
    case ATTNCHECK_FEATURE_SOFTCAP: return "softcap";
    case ATTNCHECK_FEATURE_BIAS: return "bias";
    case ATTNCHECK_FEATURE_ALIBI: return "alibi";
    case ATTNCHECK_FEATURE_SINKS: return "sinks";
    case ATTNCHECK_FEATURE_LSE: return "lse";
    case kPackedFeature: return "packed";
    case kPagedFeature: return "paged";
    case kKvFormatsFeature: return "kv_formats";
    case kAlibiBatchFeature: return "alibi_batch";
    case kBroadcastKvFeature: return "broadcast_kv";
    case kVViewFeature: return "v_view_of_k";
    case kBackwardFeature: return "backward";
  }
  return "";
}

std::string feature_list(FeatureBits bits) {
  std::string s;
  for (FeatureBits b = 1; b <= kLastFeatureBit; b <<= 1)
    if ((bits & b) && !feature_name(b).empty()) {
      if (!s.empty()) s += ',';
      s += feature_name(b);
    }
  return s.empty() ? "none" : s;
}

bool TensorLayout::valid() const {
  std::array<bool, 3> seen{};
  for (uint8_t a : order) {
    if (a > 2 || seen[a]) return false;
    seen[a] = true;
  }
  return gap[0] >= 0 && gap[1] >= 0 && gap[2] >= 0;
}

std::array<int64_t, 4> TensorLayout::strides(const std::array<int64_t, 4>& extents) const {
  std::array<int64_t, 4> stride{0, 0, 0, 1};
  int64_t inner = extents[3];  // elements of one step of the next inner level
  for (int pos = 2; pos >= 0; --pos) {
    const int axis = order[pos];
    stride[axis] = inner + gap[axis];
    inner = stride[axis] * extents[axis];
  }
  return stride;
}

int64_t TensorLayout::span(const std::array<int64_t, 4>& extents) const {
  const std::array<int64_t, 4> s = strides(extents);
  int64_t last = 0;
  for (int a = 0; a < 4; ++a) last += (extents[a] - 1) * s[a];
  return last + 1;
}

FeatureBits Problem::features() const {
  FeatureBits f = 0;
  if (has_mask()) f |= ATTNCHECK_FEATURE_MASK;
  if (causal != Causal::none) f |= ATTNCHECK_FEATURE_CAUSAL;
  if (shape.kv_head_count() != shape.heads) f |= ATTNCHECK_FEATURE_GQA;
  if (!layouts.all_dense()) f |= ATTNCHECK_FEATURE_STRIDES;
  if (!q_lens.empty() || !kv_lens.empty()) f |= ATTNCHECK_FEATURE_LENGTHS;
  if (window_left >= 0 || window_right >= 0) f |= ATTNCHECK_FEATURE_WINDOW;
  if (softcap != 0) f |= ATTNCHECK_FEATURE_SOFTCAP;
  if (has_bias()) f |= ATTNCHECK_FEATURE_BIAS;
  if (!alibi_slopes.empty()) f |= ATTNCHECK_FEATURE_ALIBI;
  if (!sinks.empty()) f |= ATTNCHECK_FEATURE_SINKS;
  if (lse_requested) f |= ATTNCHECK_FEATURE_LSE;
  if (is_backward()) f |= kBackwardFeature;
  if (packed()) f |= kPackedFeature;
  if (paged()) f |= kPagedFeature;
  if (kv_formatted()) f |= kKvFormatsFeature;
  if (alibi_per_batch()) f |= kAlibiBatchFeature;
  if (kv_broadcast()) f |= kBroadcastKvFeature;
  if (v_view_of_k) f |= kVViewFeature;
  return f;
}

double Problem::logit_from_score(int64_t bh, int64_t i, int64_t j, double z) const {
  if (softcap > 0) z = softcap * std::tanh(z / softcap);
  if (has_bias()) z += bias[bias_at(bh, i, j)];
  if (!alibi_slopes.empty()) {
    const int64_t d = diagonal(bh / shape.heads, i);
    z -= slope_of(bh) * static_cast<double>(d > j ? d - j : j - d);
  }
  return z;
}

bool Problem::row_sees_any_key(int64_t bh, int64_t i) const {
  for (int64_t j = 0; j < shape.kv_len; ++j)
    if (visible(bh, i, j)) return true;
  return false;
}

namespace {
template <class T>
void expand(std::vector<T>& t, Broadcast& how, const Shape& s) {
  if (t.empty() || how.full()) { how = Broadcast{}; return; }
  std::vector<T> full(static_cast<std::size_t>(s.mask_size()));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.q_len; ++i)
        for (int64_t j = 0; j < s.kv_len; ++j)
          full[((b * s.heads + h) * s.q_len + i) * s.kv_len + j] = t[how.at(s, b, h, i, j)];
  t = std::move(full);
  how = Broadcast{};
}
}  // namespace

void Problem::expand_mask() { expand(mask, mask_broadcast, shape); }
void Problem::expand_bias() { expand(bias, bias_broadcast, shape); }

namespace {
// cu_seqlens_q/k and total_q/k as docs/abi/plugin-abi-v3.md's "Packed batches"
// states them, and each length within its slot. "" when consistent.
std::string packing_inconsistency(const Problem& p) {
  const Shape& s = p.shape;
  struct Side { const char* cu_name; const char* total_name; const char* lens_name;
                const std::vector<int32_t>& cu; int64_t total; const std::vector<int32_t>& lens; int64_t bound; };
  for (const Side& side : {Side{"cu_seqlens_q", "total_q", "q_lens", p.cu_seqlens_q, p.total_q, p.q_lens, s.q_len},
                           Side{"cu_seqlens_k", "total_k", "kv_lens", p.cu_seqlens_k, p.total_k, p.kv_lens, s.kv_len}}) {
    std::ostringstream os;
    if (side.cu.empty()) {
      if (side.total != 0) os << side.total_name << " = " << side.total << " without " << side.cu_name << " (it must be 0)";
      if (!os.str().empty()) return os.str();
      continue;
    }
    if (static_cast<int64_t>(side.cu.size()) != s.batch + 1)
      os << side.cu_name << " holds " << side.cu.size() << " entries but batch + 1 = " << s.batch + 1;
    else if (side.cu[0] != 0)
      os << side.cu_name << "[0] = " << side.cu[0] << " (it must be 0)";
    else if (side.total < std::max<int64_t>(1, side.cu[s.batch]))
      os << side.total_name << " = " << side.total << " is below max(1, " << side.cu_name << "[batch] = " << side.cu[s.batch] << ")";
    if (!os.str().empty()) return os.str();
    for (int64_t b = 0; b < s.batch; ++b) {
      const int64_t n = int64_t{side.cu[b + 1]} - side.cu[b];
      if (n < 0 || n > side.bound)
        os << side.cu_name << "[" << b + 1 << "] - " << side.cu_name << "[" << b << "] = " << n << " is outside 0.." << side.bound;
      else if (!side.lens.empty() && side.lens[b] > n)
        os << side.lens_name << "[" << b << "] = " << side.lens[b] << " is longer than its packed slot (" << n << ")";
      if (!os.str().empty()) return os.str();
    }
  }
  if (p.packed() && p.is_backward())
    return "a packed problem with a dout: this attncheck does not lay out packed gradients yet";
  if ((p.packed_q() && !(p.layouts.q.dense_bhsd() && p.layouts.out.dense_bhsd())) ||
      (p.packed_k() && !(p.layouts.k.dense_bhsd() && p.layouts.v.dense_bhsd())))
    return "a packed side's views have layouts (packed views are dense [total][heads][dim] here)";
  return "";
}
// block_table and the pool's sizes as docs/abi/plugin-abi-v3.md's "Paged
// caches" states them, and every slot two live keys share holding the same
// bits in k and v (the pool is then one array). "" when consistent.
std::string paging_inconsistency(const Problem& p) {
  const Shape& s = p.shape;
  std::ostringstream os;
  if (!p.paged()) {
    if (p.max_pages_per_seq != 0 || p.num_pages != 0 || p.page_size != 0 || p.page_poison != 0)
      return "max_pages_per_seq, num_pages, page_size or page_poison without a block_table (they must be 0)";
    return "";
  }
  if (p.page_size < 1 || p.num_pages < 1 || p.max_pages_per_seq < 1)
    return "a paged problem needs page_size, num_pages and max_pages_per_seq >= 1";
  if (p.page_poison < 0 || p.page_poison >= kPagePoisonCodes) return "page_poison is not 0..3";
  if (static_cast<int64_t>(p.block_table.size()) != s.batch * p.max_pages_per_seq) {
    os << "block_table holds " << p.block_table.size() << " entries but batch * max_pages_per_seq = "
       << s.batch * p.max_pages_per_seq;
    return os.str();
  }
  for (std::size_t e = 0; e < p.block_table.size(); ++e)
    if (p.block_table[e] < 0 || p.block_table[e] >= p.num_pages) {
      os << "block_table[" << e << "] = " << p.block_table[e] << " is not a page of 0.." << p.num_pages - 1;
      return os.str();
    }
  if (s.kv_len > p.max_pages_per_seq * p.page_size) {
    os << "kv_len = " << s.kv_len << " is past max_pages_per_seq * page_size = " << p.max_pages_per_seq * p.page_size;
    return os.str();
  }
  if (p.packed_k()) return "paged keys with cu_seqlens_k (keys are padded, packed or paged)";
  if (p.is_backward()) return "a paged problem with a dout: backward is never called for paged calls";
  // Every key that shares a slot with the slot's first reader, compared with it.
  const int64_t kvh = s.kv_head_count();
  for (const AliasedKey& a : aliased_keys(p))
    for (int64_t h = 0; h < kvh; ++h) {
      bool same = true;
      for (int64_t d = 0; d < s.head_dim; ++d)
        same = same && same_value(p.k[p.k_at(a.b0 * kvh + h, a.j0, d)], p.k[p.k_at(a.b * kvh + h, a.j, d)]);
      for (int64_t c = 0; c < s.value_dim; ++c)
        same = same && same_value(p.v[p.v_at(a.b0 * kvh + h, a.j0, c)], p.v[p.v_at(a.b * kvh + h, a.j, c)]);
      if (!same) {
        os << "key " << a.j << " of sequence " << a.b << " and key " << a.j0 << " of sequence " << a.b0 << " share slot "
           << a.j % p.page_size << " of page " << p.page_of(a.b, a.j) << " but differ (kv head " << h << ")";
        return os.str();
      }
    }
  return "";
}

// V as a view of K (docs/abi/plugin-abi-v3.md, "V as a view of K"): v's values
// are k's first value_dim channels, every key (padding too: the call sends the
// same bytes for both), with k's layout, in the dtype, forward only. "" when consistent.
std::string v_view_inconsistency(const Problem& p) {
  if (!p.v_view_of_k) return "";
  const Shape& s = p.shape;
  if (s.value_dim > s.head_dim) return "v_view_of_k with value_dim > head_dim (v is k's first value_dim channels)";
  // A stored format: V shares K's format and scale (V's scales are K's, as its view reads them).
  if (p.v_format != p.k_format) return "v_view_of_k with v_format other than k_format (V shares K's format)";
  if (p.kv_formatted()) {
    if (p.v_scale_granularity != p.k_scale_granularity)
      return "v_view_of_k with v_scale_granularity other than k_scale_granularity (V shares K's scale)";
    // (k_scales of the wrong size: kv_storage_inconsistency, checked before, names it.)
    const std::vector<double> want = kv_view_v_scales(p);
    if (want.size() != p.v_scales.size() ||
        (!want.empty() && std::memcmp(want.data(), p.v_scales.data(), want.size() * sizeof(double)) != 0))
      return "v_view_of_k but v_scales are not what V's view of k_scales reads";
  }
  if (p.is_backward()) return "v_view_of_k with a dout (the backward of a view is not laid out yet)";
  if (!(p.layouts.v == p.layouts.k)) return "v_view_of_k with layouts.v other than layouts.k (v has k's strides)";
  const int64_t keys = s.batch * s.kv_head_count() * s.kv_len;
  for (int64_t row = 0; row < keys; ++row)
    for (int64_t c = 0; c < s.value_dim; ++c) {
      const double kv = p.k[static_cast<std::size_t>(row * s.head_dim + c)];
      const double vv = p.v[static_cast<std::size_t>(row * s.value_dim + c)];
      if (std::memcmp(&kv, &vv, sizeof kv) != 0) {
        std::ostringstream os;
        os << "v_view_of_k but v's key row " << row << " channel " << c << " is not k's (the view reads k's bytes)";
        return os.str();
      }
    }
  return "";
}

}  // namespace

double page_poison_value(DType t, int64_t page_poison) {
  switch (page_poison) {
    case 1: return std::numeric_limits<double>::infinity();
    case 2: return -std::numeric_limits<double>::infinity();
    case 3: return round_to(t, max_finite(t) / 4);
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

std::string Problem::inconsistency() const {
  const Shape& s = shape;
  if (s.batch < 1 || s.heads < 1 || s.q_len < 1 || s.kv_len < 1 || s.head_dim < 1 || s.value_dim < 1)
    return "every extent (batch, heads, q_len, kv_len, head_dim, value_dim) must be at least 1";
  if (s.kv_heads < 0 || s.kv_head_count() > s.heads || s.heads % s.kv_head_count() != 0)
    return "kv_heads must divide heads (query head h reads kv head h / (heads / kv_heads))";
  auto check = [](const char* what, std::size_t got, int64_t want) -> std::string {
    if (static_cast<int64_t>(got) == want) return "";
    std::ostringstream os;
    os << what << " holds " << got << " elements but the shape needs " << want;
    return os.str();
  };
  for (auto msg : {check("q", q.size(), s.q_size()), check("k", k.size(), s.k_size()),
                   check("v", v.size(), s.v_size())})
    if (!msg.empty()) return msg;
  if (!mask.empty())
    if (auto msg = check("mask", mask.size(), mask_broadcast.size(s)); !msg.empty()) return msg;
  if (!bias.empty()) {
    if (auto msg = check("bias", bias.size(), bias_broadcast.size(s)); !msg.empty()) return msg;
    for (double x : bias)
      if (x == std::numeric_limits<double>::infinity()) return "bias holds +inf (only -inf, which hides a key, is allowed)";
  }
  for (const auto* lens : {&q_lens, &kv_lens}) {
    if (lens->empty()) continue;
    const bool is_q = lens == &q_lens;
    if (auto msg = check(is_q ? "q_lens" : "kv_lens", lens->size(), s.batch); !msg.empty()) return msg;
    for (int32_t n : *lens)
      if (n < 0 || n > (is_q ? s.q_len : s.kv_len))
        return std::string(is_q ? "q_lens" : "kv_lens") + " holds a length outside 0.." +
               std::to_string(is_q ? s.q_len : s.kv_len);
  }
  if (auto msg = packing_inconsistency(*this); !msg.empty()) return msg;
  if (auto msg = paging_inconsistency(*this); !msg.empty()) return msg;
  if (auto msg = kv_storage_inconsistency(*this); !msg.empty()) return msg;
  if (auto msg = v_view_inconsistency(*this); !msg.empty()) return msg;
  if (auto msg = numerics_inconsistency(*this); !msg.empty()) return msg;
  if (!(softcap == 0 || (std::isfinite(softcap) && softcap > 0))) return "softcap must be 0 (none) or finite and > 0";
  for (const auto* per_head : {&alibi_slopes, &sinks}) {
    if (per_head->empty()) continue;
    const char* what = per_head == &sinks ? "sinks" : "alibi_slopes";
    const int64_t rows = per_head == &alibi_slopes && alibi_per_batch() ? s.batch : 1;  // [batch][heads] per batch
    if (auto msg = check(what, per_head->size(), rows * s.heads); !msg.empty()) return msg;
    for (double x : *per_head)
      if (!std::isfinite(x)) return std::string(what) + " must be finite";
  }
  if (auto msg = kv_broadcast_inconsistency(*this); !msg.empty()) return msg;
  if (alibi_batch_stride != 0 && alibi_slopes.empty()) return "alibi_batch_stride without alibi_slopes";
  if (alibi_batch_stride != 0 && alibi_batch_stride < s.heads)
    return "alibi_batch_stride " + std::to_string(alibi_batch_stride) + " is neither 0 nor at least heads (" +
           std::to_string(s.heads) + ")";
  if (!dout.empty())
    if (auto msg = check("dout", dout.size(), s.out_size()); !msg.empty()) return msg;
  if (dout.empty() && !layouts.gradients_dense())
    return "a forward problem has layouts for dout, dq, dk or dv (only a backward problem has gradients)";
  for (const TensorLayout* l : {&layouts.q, &layouts.k, &layouts.v, &layouts.out, &layouts.dout, &layouts.dq,
                                &layouts.dk, &layouts.dv})
    if (!l->valid()) return "a view layout's order is not a permutation of batch, head, row, or a gap is negative";
  return "";
}

std::string Problem::header() const {
  std::ostringstream os;
  os << dtype_name(dtype) << " batch=" << shape.batch << " heads=" << shape.heads
     << " q_len=" << shape.q_len << " kv_len=" << shape.kv_len << " head_dim=" << shape.head_dim
     << " value_dim=" << shape.value_dim << " causal=" << causal_name(causal) << " scale=";
  if (std::isnan(scale)) os << "default"; else os << scale;
  os << " mask=" << (mask.empty() ? "none" : "given");
  if (shape.kv_head_count() != shape.heads) os << " kv_heads=" << shape.kv_head_count();
  if (!layouts.all_dense()) os << " strided";
  if (!q_lens.empty()) os << " q_lens=given";
  if (!kv_lens.empty()) os << " kv_lens=given";
  if (window_left >= 0 || window_right >= 0) os << " window=" << window_left << "," << window_right;
  if (softcap != 0) os << " softcap=" << softcap;
  if (has_bias()) os << " bias=given";
  if (!alibi_slopes.empty()) os << " alibi=given";
  if (alibi_per_batch()) os << " alibi_batch_stride=" << alibi_batch_stride;
  if (kv_broadcast()) os << " k_broadcast=" << k_broadcast << " v_broadcast=" << v_broadcast;
  if (!sinks.empty()) os << " sinks=given";
  if (lse_requested) os << " lse";
  if (packed_q()) os << " packed_q total_q=" << total_q;
  if (packed_k()) os << " packed_k total_k=" << total_k;
  if (paged())
    os << " paged page_size=" << page_size << " num_pages=" << num_pages << " max_pages_per_seq=" << max_pages_per_seq;
  // Stored K and V (ABI v3): the tensors shown are their real values.
  for (const bool is_k : {true, false}) {
    const KvFormat f = is_k ? k_format : v_format;
    if (f == KvFormat::dtype) continue;
    os << (is_k ? " k_format=" : " v_format=") << kv_format_name(f);
    if (info(f).scaled) os << "/" << scale_granularity_name(is_k ? k_scale_granularity : v_scale_granularity);
  }
  if (v_view_of_k) os << " v_view_of_k";
  if (is_backward()) os << " backward";
  return os.str();
}

namespace {

// A tensor's extents and their names: q is [batch, heads, q_len, head_dim].
struct Extents {
  std::vector<const char*> names;
  std::vector<int64_t> sizes;
};

// "[1, 2, 3]" of a flat index into `e`.
std::string index_text(const Extents& e, std::size_t flat) {
  std::vector<int64_t> at(e.sizes.size());
  for (std::size_t d = e.sizes.size(); d-- > 0;) {
    at[d] = static_cast<int64_t>(flat % e.sizes[d]);
    flat /= e.sizes[d];
  }
  std::string s = "[";
  for (std::size_t d = 0; d < at.size(); ++d) s += (d ? ", " : "") + std::to_string(at[d]);
  return s + "]";
}

// In decimal (the case file keeps the exact hex floats), each value with the
// shortest digits that read back as it in the dtype. A small tensor whole, as
// rows of its last extent; a larger one with its extents named and, when
// shrinking left few values nonzero, those values by index ("q[0, 0, 1, 7] = -2");
// else its first max_elements values and a count of the rest.
void print_tensor(std::ostream& os, const char* name, const std::vector<double>& t, const Extents& e, DType dtype,
                  std::size_t max_elements) {
  const int64_t cols = e.sizes.back();
  const int64_t rows = cols > 0 ? static_cast<int64_t>(t.size()) / cols : 0;
  os << "  " << name << " =";
  if (t.size() <= max_elements) {
    for (int64_t r = 0; r < rows; ++r) {
      os << (r == 0 ? " [" : "\n      ") << "[";
      for (int64_t c = 0; c < cols; ++c) os << (c ? ", " : "") << shortest_text(t[r * cols + c], dtype);
      os << "]";
    }
    os << "]\n";
    return;
  }
  std::vector<std::size_t> nonzero;
  for (std::size_t k = 0; k < t.size(); ++k)
    if (!(t[k] == 0 && !std::signbit(t[k]))) nonzero.push_back(k);
  os << " [";
  for (std::size_t d = 0; d < e.names.size(); ++d) os << (d ? ", " : "") << e.names[d] << "=" << e.sizes[d];
  os << "], " << t.size() << " elements, " << nonzero.size() << " nonzero";
  constexpr std::size_t kListed = 16;
  if (nonzero.size() <= kListed) {
    os << (nonzero.empty() ? "" : ":");
    for (std::size_t k : nonzero) os << "\n      " << name << index_text(e, k) << " = " << shortest_text(t[k], dtype);
    os << "\n";
    return;
  }
  // The first rows (q[0, 0, 0, :] = [...]), about max_elements values in all.
  const int64_t per_row = std::min<int64_t>(cols, static_cast<int64_t>(max_elements));
  const int64_t shown_rows = std::min<int64_t>(rows, std::max<int64_t>(1, static_cast<int64_t>(max_elements) / per_row));
  for (int64_t r = 0; r < shown_rows; ++r) {
    std::string at = index_text(e, static_cast<std::size_t>(r * cols));
    at = e.sizes.size() > 1 ? at.substr(0, at.rfind(',')) + ", :]" : "[:]";
    os << "\n      " << name << at << " = [";
    for (int64_t c = 0; c < per_row; ++c) os << (c ? ", " : "") << shortest_text(t[r * cols + c], dtype);
    if (per_row < cols) os << ", ... (" << (cols - per_row) << " more)";
    os << "]";
  }
  if (rows > shown_rows) os << "\n      ... (" << (rows - shown_rows) << " more rows of " << cols << ")";
  os << "\n";
}

}  // namespace

std::string Problem::describe(std::size_t max_elements) const {
  std::ostringstream os;
  os << header() << "\n";
  const Shape& s = shape;
  const int64_t kvh = s.kv_head_count();
  print_tensor(os, "q", q, {{"batch", "heads", "q_len", "head_dim"}, {s.batch, s.heads, s.q_len, s.head_dim}}, dtype,
               max_elements);
  print_tensor(os, "k", k, {{"batch", "kv_heads", "kv_len", "head_dim"}, {s.batch, kvh, s.kv_len, s.head_dim}}, dtype,
               max_elements);
  print_tensor(os, "v", v, {{"batch", "kv_heads", "kv_len", "value_dim"}, {s.batch, kvh, s.kv_len, s.value_dim}},
               dtype, max_elements);
  // Masks, bias and the small v2 vectors: their rows of kv_len (or one row).
  const auto rows_of = [](std::size_t n, int64_t cols) {
    return Extents{{"row", "key"}, {cols > 0 ? static_cast<int64_t>(n) / cols : 0, cols}};
  };
  if (!mask.empty()) {
    std::vector<double> m(mask.begin(), mask.end());
    print_tensor(os, "mask", m, rows_of(m.size(), s.kv_len), DType::f64, max_elements);
  }
  if (!bias.empty()) print_tensor(os, "bias", bias, rows_of(bias.size(), s.kv_len), dtype, max_elements);
  auto print_ints = [&](const char* name, const std::vector<int32_t>& t) {
    if (t.empty()) return;
    std::vector<double> d(t.begin(), t.end());
    print_tensor(os, name, d, {{"batch"}, {static_cast<int64_t>(d.size())}}, DType::f64, max_elements);
  };
  print_ints("q_lens", q_lens);
  print_ints("kv_lens", kv_lens);
  print_ints("cu_seqlens_q", cu_seqlens_q);
  print_ints("cu_seqlens_k", cu_seqlens_k);
  if (paged()) {
    std::vector<double> t(block_table.begin(), block_table.end());
    print_tensor(os, "block_table", t, {{"batch", "page"}, {s.batch, max_pages_per_seq}}, DType::f64, max_elements);
  }
  // Slopes and sinks are f32 in the call whatever the dtype (ABI v2).
  if (!alibi_slopes.empty())
    print_tensor(os, "alibi_slopes", alibi_slopes,
                 alibi_per_batch() ? Extents{{"batch", "heads"}, {s.batch, s.heads}} : Extents{{"heads"}, {s.heads}},
                 DType::f32, max_elements);
  if (!sinks.empty()) print_tensor(os, "sinks", sinks, {{"heads"}, {s.heads}}, DType::f32, max_elements);
  if (is_backward())
    print_tensor(os, "dout", dout, {{"batch", "heads", "q_len", "value_dim"}, {s.batch, s.heads, s.q_len, s.value_dim}},
                 dtype, max_elements);
  return os.str();
}

Problem make_problem(DType dtype, const Shape& shape, Causal causal, double scale) {
  Problem p;
  p.dtype = dtype;
  p.shape = shape;
  p.shape.kv_heads = shape.kv_head_count();
  p.causal = causal;
  p.scale = scale;
  p.q.assign(shape.q_size(), 0.0);
  p.k.assign(p.shape.k_size(), 0.0);
  p.v.assign(p.shape.v_size(), 0.0);
  return p;
}

void round_tensors(Problem& p) {
  const auto size = [](const std::vector<double>& t) { return static_cast<int64_t>(t.size()); };
  for (auto* t : {&p.q, &p.k, &p.v, &p.bias, &p.dout}) round_n(p.dtype, t->data(), size(*t));
  for (auto* t : {&p.alibi_slopes, &p.sinks}) round_n(DType::f32, t->data(), size(*t));  // the ABI passes them as float
}

}  // namespace attncheck
