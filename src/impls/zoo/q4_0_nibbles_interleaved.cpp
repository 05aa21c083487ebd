// Zoo (ABI v3 KV_FORMATS): Q4_0 blocks read as pairs, INT4's layout: channel 32m + 2i from
// the low nibble of qs[i] and 32m + 2i + 1 from its high nibble, where ggml stores channel
// 32m + j in the low nibble of qs[j] and 32m + 16 + j in the high nibble (halves:
// dequantize_row_q4_0). The mix-up of two 4-bit layouts that issue #32 cites as "q4_0 K/V gave
// gibberish on one backend". The block's d is right, and every other format. Emulated by
// rewriting each Q4_0 row of K and V so that a correct decoder reads what the faulty one
// would, then reference's forward. Caught by quantized_matches_oracle wherever a Q4_0 side
// holds channels that differ from their pair-swapped neighbours (almost every case).
#include <cstdint>
#include <cstring>
#include <vector>

#include "impls/kernels.h"
#include "impls/zoo/kv_format_members.h"

namespace attncheck {

namespace {

constexpr int64_t kQ40BlockBytes = 18, kQ40Channels = 32;

// A dense copy [batch][kv_heads][kv_len][blocks] of a Q4_0 view, each block's nibbles moved so
// that halves-decoding gives the pairs-decoding of the original.
void interleave_q4_0(const attncheck_call_v2& c, attncheck_view& view, int64_t cols, std::vector<uint8_t>& into) {
  const int64_t blocks = cols / kQ40Channels;
  into.assign(static_cast<std::size_t>(c.batch * c.kv_heads * c.kv_len * blocks * kQ40BlockBytes), 0);
  const auto* base = static_cast<const uint8_t*>(view.data);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.kv_heads; ++h)
      for (int64_t j = 0; j < c.kv_len; ++j)
        for (int64_t m = 0; m < blocks; ++m) {
          const uint8_t* src =
              base + (b * view.stride[0] + h * view.stride[1] + j * view.stride[2] + m) * kQ40BlockBytes;
          uint8_t* dst = into.data() + (((b * c.kv_heads + h) * c.kv_len + j) * blocks + m) * kQ40BlockBytes;
          std::memcpy(dst, src, 2);  // d
          auto pairs_nibble = [&](int64_t ch) { return (src[2 + ch / 2] >> ((ch % 2) * 4)) & 15; };
          for (int64_t i = 0; i < 16; ++i)
            dst[2 + i] = static_cast<uint8_t>(pairs_nibble(i) | (pairs_nibble(16 + i) << 4));
        }
  view.data = into.data();
  view.stride[3] = 1, view.stride[2] = blocks, view.stride[1] = c.kv_len * blocks;
  view.stride[0] = c.kv_heads * c.kv_len * blocks;
}

}  // namespace

int q4_0_nibbles_interleaved_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || call->block_table || call->cu_seqlens_k ||
      (call->k_format != ATTNCHECK_KV_Q4_0 && call->v_format != ATTNCHECK_KV_Q4_0))
    return reference_forward_v3(call, err, err_len);
  attncheck_call_v3 c = *call;
  std::vector<uint8_t> k, v;
  if (c.k_format == ATTNCHECK_KV_Q4_0) interleave_q4_0(c.v2, c.v2.k, c.v2.head_dim, k);
  if (c.v_format == ATTNCHECK_KV_Q4_0) interleave_q4_0(c.v2, c.v2.v, c.v2.value_dim, v);
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
