#include "host/unclaimed_bytes.h"

#include <array>
#include <cstring>

namespace attncheck {

namespace {

constexpr std::size_t kPeriod = 4096;

// A pattern that depends on the offset, so a plugin that copies a block to
// the wrong place (or writes one repeated byte) cannot match it by chance.
const uint8_t* pattern() {
  static const auto p = [] {
    std::array<uint8_t, kPeriod> a{};
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(0x3C ^ (i * 167) ^ (i >> 8));
    return a;
  }();
  return p.data();
}

}  // namespace

std::vector<ByteSpan> unclaimed_spans(const CallLayout& l, std::size_t region_size) {
  // The claimed parts in region order; what lies between them is unclaimed.
  const ByteSpan claimed[] = {{l.q, l.q + l.q_bytes},
                              {l.k, l.k + l.k_bytes},
                              {l.v, l.v + l.v_bytes},
                              {l.mask, l.mask + l.mask_bytes},
                              {l.bias, l.bias + l.bias_bytes},
                              {l.q_lens, l.q_lens + l.q_lens_bytes},
                              {l.kv_lens, l.kv_lens + l.kv_lens_bytes},
                              {l.alibi, l.alibi + l.alibi_bytes},
                              {l.sinks, l.sinks + l.sinks_bytes},
                              {l.cu_q, l.cu_q + l.cu_q_bytes},
                              {l.cu_k, l.cu_k + l.cu_k_bytes},
                              {l.table, l.table + l.table_bytes},
                              {l.k_scale, l.k_scale + l.k_scale_bytes},
                              {l.v_scale, l.v_scale + l.v_scale_bytes},
                              {l.dout, l.dout + l.dout_bytes},
                              {l.guard_before, l.guard_after + CallLayout::kGuardBytes},
                              {l.lse_guard_before, l.lse_bytes ? l.lse_guard_after + CallLayout::kGuardBytes : 0},
                              {l.dq.guard_before, l.dq.end()},
                              {l.dk.guard_before, l.dk.end()},
                              {l.dv.guard_before, l.dv.end()}};
  std::vector<ByteSpan> spans;
  std::size_t at = 0;
  for (const ByteSpan& c : claimed) {
    if (c.begin > at) spans.push_back({at, c.begin});
    if (c.end > at) at = c.end;
  }
  if (region_size > at) spans.push_back({at, region_size});
  return spans;
}

void fill_unclaimed(uint8_t* base, const std::vector<ByteSpan>& spans) {
  for (const ByteSpan& s : spans)
    for (std::size_t at = s.begin; at < s.end;) {
      const std::size_t phase = at % kPeriod, n = std::min(s.end - at, kPeriod - phase);
      std::memcpy(base + at, pattern() + phase, n);
      at += n;
    }
}

long first_changed_unclaimed(const uint8_t* base, const std::vector<ByteSpan>& spans) {
  for (const ByteSpan& s : spans)
    for (std::size_t at = s.begin; at < s.end;) {
      const std::size_t phase = at % kPeriod, n = std::min(s.end - at, kPeriod - phase);
      if (std::memcmp(base + at, pattern() + phase, n) != 0)
        for (std::size_t i = 0; i < n; ++i)
          if (base[at + i] != pattern()[phase + i]) return static_cast<long>(at + i);
      at += n;
    }
  return -1;
}

}  // namespace attncheck
