// Zoo (ABI v3 KV_FORMATS): a kernel that loads keys in whole blocks of 16 and, for the last
// block of a sequence, computes P V over the whole block, the keys past Lk with weight 0: a
// dead V code that decodes to NaN or infinity makes 0 x NaN = NaN in every output channel it
// touches (vllm#53628 let 0 x NaN through; vLLM fills unused slots with the e4m3 NaN 0x7F).
// Right on every call whose dead V rows decode finite (int8 and int4, which have no NaN code;
// a V stored in the dtype; Lk a multiple of 16 or kv_len). Emulated by reference's forward,
// then NaN written into out[b][h][i][c] of each live query row i of every head h reading kv
// head h / (heads / kv_heads) wherever a dead V row j in [Lk, min(kv_len, 16 ceil(Lk / 16)))
// of that kv head has a non-finite channel c. Caught by dead_codes_inert (its twin with finite
// codes in the dead rows comes back without NaN) and by quantized_matches_oracle where the
// drawn dead rows hold NaN codes or NaN d.
#include <algorithm>
#include <cmath>
#include <vector>

#include "impls/kernels.h"
#include "impls/kv_format_gather.h"
#include "impls/zoo/kv_format_members.h"

namespace attncheck {

int kv_dead_block_nan_forward_v3(const attncheck_call_v3* call, char* err, size_t err_len) {
  const int rc = reference_forward_v3(call, err, err_len);
  if (rc != 0 || !call || call->block_table || call->cu_seqlens_k || call->v_format == ATTNCHECK_KV_DTYPE ||
      !detail::kv_format_defect(*call).empty())
    return rc;
  const attncheck_call_v2& c = call->v2;
  const DType dt = static_cast<DType>(static_cast<int>(c.dtype));
  KvView v;
  v.data = static_cast<const uint8_t*>(c.v.data);
  v.format = static_cast<KvFormat>(static_cast<int>(call->v_format));
  v.dtype = dt;
  for (int a = 0; a < 4; ++a) v.stride[a] = c.v.stride[a];
  v.scale.data = call->v_scale.data;
  for (int a = 0; a < 3; ++a) v.scale.stride[a] = call->v_scale.stride[a];
  const int64_t group = c.heads / c.kv_heads, e = static_cast<int64_t>(dtype_bytes(dt));
  std::vector<double> row(static_cast<std::size_t>(c.value_dim));
  std::vector<char> nan_channel(static_cast<std::size_t>(c.value_dim));
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t lk = c.kv_lens ? c.kv_lens[b] : c.kv_len, lq = c.q_lens ? c.q_lens[b] : c.q_len;
    const int64_t block_end = std::min<int64_t>(c.kv_len, (lk + 15) / 16 * 16);
    for (int64_t kh = 0; kh < c.kv_heads; ++kh) {
      std::fill(nan_channel.begin(), nan_channel.end(), 0);
      bool any = false;
      for (int64_t j = lk; j < block_end; ++j) {
        decode_view_row(v, b, b, kh, j, c.value_dim, row.data());
        for (int64_t ch = 0; ch < c.value_dim; ++ch)
          if (!std::isfinite(row[static_cast<std::size_t>(ch)])) nan_channel[static_cast<std::size_t>(ch)] = 1, any = true;
      }
      if (!any || lk == 0) continue;  // a sequence without keys computes no block
      for (int64_t h = kh * group; h < (kh + 1) * group; ++h)
        for (int64_t i = 0; i < lq; ++i)
          for (int64_t ch = 0; ch < c.value_dim; ++ch)
            if (nan_channel[static_cast<std::size_t>(ch)])
              encode_element(dt, NAN,
                             static_cast<uint8_t*>(c.out.data) +
                                 (b * c.out.stride[0] + h * c.out.stride[1] + i * c.out.stride[2] + ch * c.out.stride[3]) * e);
    }
  }
  return rc;
}

}  // namespace attncheck
