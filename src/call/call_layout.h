// The bytes of one ABI call laid out in a single region, so the same layout
// serves an in-process buffer and a shared-memory mapping for a child process.
//
//   [q][k][v][mask][bias][q_lens][kv_lens][alibi][sinks][cu_seqlens_q][cu_seqlens_k][block_table]
//   [k_scale][v_scale]
//   [guard | out | guard] [guard | lse | guard]            (lse only when requested)
//   [guard | dq | guard] [guard | dk | guard] [guard | dv | guard]
//                                                  (a backward problem, abi 2)
//
// Each input is written from the Problem; the bytes of a strided view that
// hold no element (gaps between rows and heads) are filled with a NaN of the
// dtype, so a kernel that ignores the strides reads NaN. Padding rows and keys
// (lengths) hold what the Problem holds there. `out` (every live element) is
// poisoned before the call with a signalling-NaN pattern that no arithmetic
// produces; every other byte of out's span (gaps, padding rows) and the zones
// around it hold a known guard pattern; lse likewise. Inputs are compared with
// their encoding after the call. So every process fault (unwritten element,
// write outside the live elements) is seen without trusting the callee.
//
// A backward problem (Problem::dout, abi 2 only) adds dout after the inputs
// (an input like q: NaN in its gaps, padding rows as the Problem holds them)
// and the gradient zones, laid out and poisoned like out: every live element
// of dq, dk, dv poisoned, every other byte of their spans (gaps, padding rows
// of dq, padding keys of dk and dv) and the zones around them guarded. The
// backward call is made on the same region after forward, whose out and lse
// are then its inputs: they are snapshot after forward and must come back
// unchanged, like q, k, v, dout and the rest (grad_call.cpp).
//
// A packed side (ABI v3, abi 3) is laid out dense [total][heads][dim]: row r
// of sequence b at packed row cu[b] + r; its slack rows (cu[batch] ..
// total-1) are NaN in q, k and v and guard bytes in out, like gaps (so a
// write there is an out_of_bounds_write), and rows past a sequence's length
// are its padding, as above.
//
// Paged keys (ABI v3, abi 3): k and v are the page pool, dense
// [num_pages][page_size][kv_heads][dim] or as their layouts order (page, slot,
// kv head) with gaps (call/paged_pool.h): live keys where
// block_table puts them, every other slot the problem's page_poison; the
// table is an input after cu_seqlens_k.
//
// K or V in a stored format (ABI v3, abi 3): the codes of the real values
// (problem/kv_storage.h), dense [batch][kv_heads][kv_len][units]; keys past
// Lk hold poison codes (NaN codes, NaN d); the scales are inputs after the
// table.
//
// V as a view of K (ABI v3's V_VIEW_OF_K, abi 2 or 3): v has no bytes of its
// own (v_bytes 0): v == k and v's strides are k's, so v reads k's first
// value_dim channels (problem.h: the Problem's v holds exactly those); with
// paging both read k's pool.
//
// ALiBi slopes per (batch, head) (ABI v3, abi 3): row b of the slopes at b *
// alibi_batch_stride floats, the floats between rows NaN. K or V expanded
// (ABI v3's BROADCAST_KV, abi 3): one batch entry's (one kv head's) slice,
// stride 0 on the expanded axis (problem/kv_broadcast.h).
//
// A v1 call (abi 1) is dense BHSD, as v1 defines, with a full mask; only
// problems within kV1Features can be laid out for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attncheck/plugin_v3.h"
#include "problem/outcome.h"
#include "problem/problem.h"

namespace attncheck {

struct CallLayout {
  static constexpr std::size_t kGuardBytes = 4096;
  static constexpr std::size_t kAlign = 64;
  int abi = 1;  // 1 or 2: the call this region is laid out for
  // Offsets in the region and byte counts; out_bytes and q/k/v_bytes are the
  // views' whole spans, gaps included. Absent parts have 0 bytes.
  std::size_t q = 0, k = 0, v = 0, mask = 0, bias = 0, q_lens = 0, kv_lens = 0, alibi = 0, sinks = 0;
  std::size_t q_bytes = 0, k_bytes = 0, v_bytes = 0, mask_bytes = 0, bias_bytes = 0, q_lens_bytes = 0,
              kv_lens_bytes = 0, alibi_bytes = 0, sinks_bytes = 0;
  std::size_t guard_before = 0, out = 0, guard_after = 0, out_bytes = 0;
  std::size_t lse_guard_before = 0, lse = 0, lse_guard_after = 0, lse_bytes = 0;
  // A backward problem (abi 2): dout is an input (within inputs_end), each
  // gradient one output zone. `bytes` is the view's whole span.
  bool backward = false;
  std::size_t dout = 0, dout_bytes = 0;
  int64_t dout_stride[4]{};
  struct GradZone {
    std::size_t guard_before = 0, data = 0, guard_after = 0, bytes = 0;
    int64_t stride[4]{};
    std::size_t end() const { return guard_after + (bytes ? kGuardBytes : 0); }  // one past its last guard
  };
  GradZone dq, dk, dv;  // dq [batch][heads][q_len][head_dim], dk, dv k's and v's extents
  // Element strides of the views ([batch][head][row][col]); mask and bias
  // carry 0 on broadcast axes.
  int64_t q_stride[4]{}, k_stride[4]{}, v_stride[4]{}, out_stride[4]{}, mask_stride[4]{}, bias_stride[4]{};
  // ABI v3's packing (abi 3): cu_seqlens_q / cu_seqlens_k, int32 [batch + 1]
  // inputs (0 bytes when that side is padded). A packed side's views are
  // dense [total][heads][dim], stride[0] = 0, their spans total rows long.
  std::size_t cu_q = 0, cu_k = 0, cu_q_bytes = 0, cu_k_bytes = 0;
  // ABI v3's paging (abi 3): block_table, int32 [batch][max_pages_per_seq]
  // (0 bytes when not paged); k and v are then the pool, their spans its size.
  std::size_t table = 0, table_bytes = 0;
  // ABI v3's stored K and V formats (abi 3): k and v are then the stored
  // tensors, dense [batch][kv_heads][kv_len][units] with strides in units
  // (problem/kv_storage.h), and a scaled format's float32 scales an input
  // (0 bytes for the other formats).
  std::size_t k_scale = 0, v_scale = 0, k_scale_bytes = 0, v_scale_bytes = 0;
  std::size_t inputs_end = 0;  // first byte after the last input
  std::size_t total = 0;
};

// abi: 1 (the problem must lie within kV1Features), 2 (not packed) or 3
// (the same region as 2, with the packing's arrays: needed for a packed problem).
CallLayout layout_for(const Problem& p, int abi = 1);

// Writes inputs, poison and guards into `base` (layout.total bytes, 64-aligned).
void encode_call(const Problem& p, const CallLayout& layout, uint8_t* base);

// The ABI views of the encoded call at `base` (pointers into that region).
attncheck_call abi_call(const Problem& p, const CallLayout& layout, uint8_t* base);
attncheck_call_v2 abi_call_v2(const Problem& p, const CallLayout& layout, uint8_t* base);
// The v3 call: abi_call_v2's, then cu_seqlens_q/k and total_q/k of a packed
// problem and block_table, max_pages_per_seq, num_pages and page_size of a
// paged one (every other added field neutral). The layout must be abi 3 (or
// 2 for a problem that is neither).
attncheck_call_v3 abi_call_v3(const Problem& p, const CallLayout& layout, uint8_t* base);

// After the call returned ATTNCHECK_OK: checks guards, inputs and poison,
// decodes out (and lse). Padding rows decode as 0 in out and in lse: they are
// guard bytes, and a write there is an out_of_bounds_write. For a backward
// problem forward must also have left the gradient zones as encoded (the
// forward call is not given them).
Outcome decode_call(const Problem& p, const CallLayout& layout, const uint8_t* base);

// Maps a forward return code and err text to an Outcome (decoding when OK).
Outcome outcome_from_return(int rc, const char* err, const Problem& p, const CallLayout& layout,
                            const uint8_t* base);

// --- The backward call of a backward problem (grad_call.cpp) ---
// Example usage (after forward answered and decoded ok):
//   const ForwardOutputs before = snapshot_forward_outputs(layout, base);
//   const attncheck_grad grad = abi_grad(p, layout, base);
//   const int rc = impl->backward(&call, &grad, err, sizeof err);  // the forward's `call`
//   Outcome o = backward_outcome_from_return(rc, err, p, layout, base, before, std::move(forward));

// out and lse with their guard zones, as forward left them: inputs of the
// backward call, which must leave them so.
struct ForwardOutputs {
  std::vector<uint8_t> out_zone, lse_zone;  // [guard | out | guard], [guard | lse | guard] (empty: no lse)
};
ForwardOutputs snapshot_forward_outputs(const CallLayout& layout, const uint8_t* base);

// The gradient views of the encoded call at `base` (layout.backward).
attncheck_grad abi_grad(const Problem& p, const CallLayout& layout, uint8_t* base);

// After backward returned ATTNCHECK_OK: checks the gradients' guards and
// non-live bytes, that out and lse are as `before` and every input as
// encoded, that no live gradient element holds poison; then decodes dq, dk,
// dv into `forward` (the forward's decoded Outcome; padding rows of dq and
// padding keys of dk, dv decode as NaN). A fault's message says it was
// backward's ("backward wrote into out, which is an input of the backward call ...").
Outcome decode_grad(const Problem& p, const CallLayout& layout, const uint8_t* base, const ForwardOutputs& before,
                    Outcome forward);

// Maps backward's return code and err text to an Outcome (decode_grad when OK).
Outcome backward_outcome_from_return(int rc, const char* err, const Problem& p, const CallLayout& layout,
                                     const uint8_t* base, const ForwardOutputs& before, Outcome forward);

}  // namespace attncheck
