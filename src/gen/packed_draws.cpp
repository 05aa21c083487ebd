#include "gen/packed_draws.h"

#include <algorithm>

namespace attncheck::gen {

namespace {

// Slots from each sequence's length (lens[b], or 0) to the bound; a fifth of
// them exactly the length (an empty sequence when it is 0 or there are no lengths).
template <class C>
std::vector<int32_t> draw_slots(C& r, const std::vector<int32_t>& lens, int64_t batch, int64_t bound) {
  std::vector<int32_t> cu{0};
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t lo = lens.empty() ? 0 : lens[b];
    const int64_t n = r.chance(0.2) ? lo : r.integer(lo, bound);
    cu.push_back(static_cast<int32_t>(cu.back() + n));
  }
  return cu;
}

// cu [batch + 1] from slot lengths.
std::vector<int32_t> prefix_sums(const std::vector<int64_t>& slots) {
  std::vector<int32_t> cu{0};
  for (int64_t n : slots) cu.push_back(static_cast<int32_t>(cu.back() + n));
  return cu;
}

}  // namespace

template <class C>
void draw_packing(C& r, Problem& p) {
  const Shape& s = p.shape;
  // q only, keys only, both; q only when the keys are paged (one of the three storages).
  const int64_t sides = p.paged() ? 0 : r.integer(0, 2);
  if (sides != 1) {
    p.cu_seqlens_q = draw_slots(r, p.q_lens, s.batch, s.q_len);
    p.total_q = std::max<int64_t>(1, p.cu_seqlens_q.back() + (r.chance(0.5) ? 0 : r.integer(1, 3)));
    p.layouts.q = p.layouts.out = TensorLayout{};
  }
  if (sides != 0) {
    p.cu_seqlens_k = draw_slots(r, p.kv_lens, s.batch, s.kv_len);
    p.total_k = std::max<int64_t>(1, p.cu_seqlens_k.back() + (r.chance(0.5) ? 0 : r.integer(1, 3)));
    p.layouts.k = p.layouts.v = TensorLayout{};
  }
}

template void draw_packing(RandomChoices&, Problem&);
template void draw_packing(ByteChoices&, Problem&);

void shrink_packing(const Problem& p, std::vector<Problem>& out) {
  const int64_t batch = p.shape.batch;
  auto unpack_q = [&](Problem& c) {
    if (c.q_lens.empty())
      for (int64_t b = 0; b < batch; ++b) c.q_lens.push_back(static_cast<int32_t>(p.q_slot_of(b)));
    c.cu_seqlens_q.clear();
    c.total_q = 0;
  };
  auto unpack_k = [&](Problem& c) {
    if (c.kv_lens.empty())
      for (int64_t b = 0; b < batch; ++b) c.kv_lens.push_back(static_cast<int32_t>(p.kv_slot_of(b)));
    c.cu_seqlens_k.clear();
    c.total_k = 0;
  };
  if (p.packed_q() && p.packed_k()) {
    Problem c = p;
    unpack_q(c), unpack_k(c);
    out.push_back(std::move(c));
  }
  if (p.packed_q()) { Problem c = p; unpack_q(c); out.push_back(std::move(c)); }
  if (p.packed_k()) { Problem c = p; unpack_k(c); out.push_back(std::move(c)); }
  // The slack dropped.
  if (p.packed_q() && p.total_q > std::max<int64_t>(1, p.cu_seqlens_q.back())) {
    Problem c = p;
    c.total_q = std::max<int64_t>(1, p.cu_seqlens_q.back());
    out.push_back(std::move(c));
  }
  if (p.packed_k() && p.total_k > std::max<int64_t>(1, p.cu_seqlens_k.back())) {
    Problem c = p;
    c.total_k = std::max<int64_t>(1, p.cu_seqlens_k.back());
    out.push_back(std::move(c));
  }
  // Each non-empty slot cut to its length (no padding inside it).
  for (const bool q : {true, false}) {
    if (q ? !p.packed_q() : !p.packed_k()) continue;
    const std::vector<int32_t>& lens = q ? p.q_lens : p.kv_lens;
    if (lens.empty()) continue;
    std::vector<int64_t> slots;
    bool shorter = false;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t slot = q ? p.q_slot_of(b) : p.kv_slot_of(b);
      slots.push_back(lens[b]);
      shorter = shorter || lens[b] < slot;
    }
    if (!shorter) continue;
    Problem c = p;
    std::vector<int32_t>& cu = q ? c.cu_seqlens_q : c.cu_seqlens_k;
    int64_t& total = q ? c.total_q : c.total_k;
    const int64_t slack = total - cu.back();
    cu = prefix_sums(slots);
    total = std::max<int64_t>(1, cu.back() + slack);
    out.push_back(std::move(c));
  }
}

}  // namespace attncheck::gen
