// The built-ins' reading of K and V in a stored format (ABI v3, "Stored formats of K and V";
// docs/kv-formats.md): each live row (b, kv head, key j < Lk) decoded exactly to its real
// values (problem/kv_decode.h: code times scale, or times its block's d) and rounded once to
// the call's dtype into a dense copy [batch][kv_heads][kv_len][dim], the call rewritten to read
// it with its formats neutral. Then every kernel computes "as version 2" over the real values
// rounded once: the one rounding of each real K and V element the bound allows
// (docs/tolerance.md, "Stored K and V formats"). Keys past Lk are never decoded (they hold
// poison codes); the copy holds zeros there, which no kernel reads.
//
// Shared by reference, naive and online, as paged_gather.h is: they check each other's
// arithmetic, not this decoding, which the format laws check against the oracle over the
// real values (quantized_matches_oracle).
//
// Example usage (dispatch_v3):
//   KvDecodedCopies copies;
//   if (formatted) { defect = kv_format_defect(*call); ...; plain = decode_kv_formats(*call, copies); }
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "attncheck/plugin_v3.h"
#include "problem/dtype.h"
#include "problem/kv_decode.h"
#include "problem/kv_format.h"

namespace attncheck::detail {

inline bool kv_formats_in_use(const attncheck_call_v3& c) {
  return static_cast<int>(c.k_format) != ATTNCHECK_KV_DTYPE || static_cast<int>(c.v_format) != ATTNCHECK_KV_DTYPE ||
         c.k_scale.data || c.v_scale.data;
}

// What a call with stored formats must hold for the built-ins; "" when usable.
inline std::string kv_format_defect(const attncheck_call_v3& c) {
  const attncheck_call_v2& v = c.v2;
  if (c.block_table || c.cu_seqlens_k) return "stored K and V formats with paged or packed keys are not offered";
  const int dt = static_cast<int>(v.dtype);
  if (dt < ATTNCHECK_F32 || dt > ATTNCHECK_BF16) return "dtype is not one of the ABI's";
  struct Side { const char* name; int format; const attncheck_scale* scale; const attncheck_view* view; int64_t cols; };
  const Side sides[] = {{"k", static_cast<int>(c.k_format), &c.k_scale, &v.k, v.head_dim},
                        {"v", static_cast<int>(c.v_format), &c.v_scale, &v.v, v.value_dim}};
  for (const Side& s : sides) {
    const KvFormatInfo* f = find_kv_format(s.format);
    if (!f) return std::string(s.name) + "_format is not an attncheck_kv_format";
    if (!kv_format_allows(f->format, static_cast<DType>(dt)))
      return std::string(s.name) + "_format does not come with this dtype";
    if (!kv_channels_fit(f->format, s.cols)) return std::string(s.name) + "'s channels are not a whole number of units";
    if (f->scaled != (s.scale->data != nullptr))
      return std::string(s.name) + "_scale must be given exactly with a scaled format";
    if (f->format != KvFormat::dtype && s.view->stride[3] != 1)
      return std::string(s.name) + ".stride[3] must be 1 in a stored format";
    for (int64_t st : s.view->stride)
      if (st < 0) return std::string(s.name) + " has a negative stride";
    for (int64_t st : s.scale->stride)
      if (st < 0) return std::string(s.name) + "_scale has a negative stride";
  }
  return "";
}

struct KvDecodedCopies {
  std::vector<uint8_t> k, v;
};

// The call with k and v (those in a stored format) decoded into `copies`, dense BHSD in the
// call's dtype, and its formats and scales neutral. Throws std::runtime_error naming the key
// when a live element decodes to NaN or infinity (the checker never sends one). The call must
// have passed kv_format_defect.
inline attncheck_call_v3 decode_kv_formats(const attncheck_call_v3& c, KvDecodedCopies& copies) {
  attncheck_call_v3 r = c;
  attncheck_call_v2& v = r.v2;
  const DType dt = static_cast<DType>(static_cast<int>(v.dtype));
  const std::size_t e = static_cast<std::size_t>(dtype_bytes(dt));
  auto decode = [&](int format, const attncheck_scale& sc, const attncheck_view& view, int64_t cols,
                    std::vector<uint8_t>& into, attncheck_view& out, const char* name) {
    if (format == ATTNCHECK_KV_DTYPE) return;
    KvView kv;
    kv.data = static_cast<const uint8_t*>(view.data);
    kv.format = static_cast<KvFormat>(format);
    kv.dtype = dt;
    for (int a = 0; a < 4; ++a) kv.stride[a] = view.stride[a];
    kv.scale.data = sc.data;
    for (int a = 0; a < 3; ++a) kv.scale.stride[a] = sc.stride[a];
    into.assign(static_cast<std::size_t>(v.batch * v.kv_heads * v.kv_len * cols) * e, 0);
    std::vector<double> row(static_cast<std::size_t>(cols));
    for (int64_t b = 0; b < v.batch; ++b) {
      const int64_t lk = v.kv_lens ? v.kv_lens[b] : v.kv_len;
      for (int64_t h = 0; h < v.kv_heads; ++h)
        for (int64_t j = 0; j < lk; ++j) {
          if (!decode_view_row(kv, b, b, h, j, cols, row.data()).finite())
            throw std::runtime_error(std::string("invalid call: live ") + name + " key " + std::to_string(j) +
                                     " of batch entry " + std::to_string(b) + " decodes to NaN or infinity");
          // One rounding of each real element to the dtype (encode rounds to nearest).
          encode_elements(dt, row.data(), cols,
                          into.data() + static_cast<std::size_t>(((b * v.kv_heads + h) * v.kv_len + j) * cols) * e);
        }
    }
    out.data = into.data();
    out.stride[3] = 1, out.stride[2] = cols, out.stride[1] = v.kv_len * cols, out.stride[0] = v.kv_heads * v.kv_len * cols;
  };
  decode(static_cast<int>(c.k_format), c.k_scale, c.v2.k, v.head_dim, copies.k, v.k, "k");
  decode(static_cast<int>(c.v_format), c.v_scale, c.v2.v, v.value_dim, copies.v, v.v, "v");
  r.k_format = r.v_format = ATTNCHECK_KV_DTYPE;
  r.k_scale = r.v_scale = attncheck_scale{nullptr, {0, 0, 0}};
  return r;
}

}  // namespace attncheck::detail
