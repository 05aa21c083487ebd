// Zoo (ABI v3 KV_FORMATS): INT4 rows read as Q4_0's halves by 32 channels: channel 32m + j from
// the low nibble of byte 16m + j and 32m + 16 + j from its high nibble, where the ABI (ONNX
// Runtime's pack_int4) stores channel 2i in the low nibble of byte i and 2i + 1 in the high
// one (pairs). A kernel that shares its 4-bit unpacking with a ggml-style Q4_0 path: the
// mirror image of q4_0_nibbles_interleaved, and the other half of issue #32's "nibble order".
// Each channel keeps its own scale; every other format is right, and INT4 rows whose channels
// are not a multiple of 32 too (the halves need whole blocks). Emulated by rewriting each INT4
// row of K and V so that a correct decoder reads what the faulty one would, then reference's
// forward. Caught by equal_values_across_formats (the same codes as INT8 come back right; the
// message names "int4 nibbles read as halves") and by quantized_matches_oracle.
#include <cstdint>
#include <cstring>
#include <vector>

#include "impls/kernels.h"
#include "impls/zoo/kv_format_members.h"

namespace attncheck {

namespace {

// A dense copy [batch][kv_heads][kv_len][cols / 2] of an INT4 view, each 16-byte group's
// nibbles moved so that pairs-decoding gives the halves-decoding of the original.
void int4_as_halves(const attncheck_call_v2& c, attncheck_view& view, int64_t cols, std::vector<uint8_t>& into) {
  const int64_t bytes = cols / 2;
  into.assign(static_cast<std::size_t>(c.batch * c.kv_heads * c.kv_len * bytes), 0);
  const auto* base = static_cast<const uint8_t*>(view.data);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.kv_heads; ++h)
      for (int64_t j = 0; j < c.kv_len; ++j) {
        const uint8_t* src = base + b * view.stride[0] + h * view.stride[1] + j * view.stride[2];
        uint8_t* dst = into.data() + ((b * c.kv_heads + h) * c.kv_len + j) * bytes;
        for (int64_t m = 0; m < cols / 32; ++m) {
          const uint8_t* g = src + 16 * m;
          auto halves_nibble = [&](int64_t ch) { return ch < 16 ? g[ch] & 15 : g[ch - 16] >> 4; };
          for (int64_t i = 0; i < 16; ++i)
            dst[16 * m + i] = static_cast<uint8_t>(halves_nibble(2 * i) | (halves_nibble(2 * i + 1) << 4));
        }
      }
  view.data = into.data();
  view.stride[3] = 1, view.stride[2] = bytes, view.stride[1] = c.kv_len * bytes;
  view.stride[0] = c.kv_heads * c.kv_len * bytes;
}

}  // namespace

int int4_nibbles_as_halves_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  if (!call || call->block_table || call->cu_seqlens_k) return reference_forward_v3(call, err, err_len);
  const bool k = call->k_format == ATTNCHECK_KV_INT4 && call->v2.head_dim % 32 == 0;
  const bool v = call->v_format == ATTNCHECK_KV_INT4 && call->v2.value_dim % 32 == 0;
  if (!k && !v) return reference_forward_v3(call, err, err_len);
  attncheck_call_v3 c = *call;
  std::vector<uint8_t> kc, vc;
  if (k) int4_as_halves(c.v2, c.v2.k, c.v2.head_dim, kc);
  if (v) int4_as_halves(c.v2, c.v2.v, c.v2.value_dim, vc);
  return reference_forward_v3(&c, err, err_len);
}

}  // namespace attncheck
