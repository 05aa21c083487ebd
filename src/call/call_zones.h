// The pieces a call's region is made of (call_layout.h): input views written
// through their strides with NaN in their gaps, and output zones, each a view's
// span between two guard zones with its live elements poisoned and every other
// byte guarded. Shared by the forward call (call_layout.cpp) and the backward
// call (grad_call.cpp); not an interface outside problem/.
//
// Example usage:
//   const OutputView dk = grad_view(p, layout, GradTensor::dk);
//   prepare_output(p, dk, p.dtype, base);            // before the call
//   std::string why = changed_non_live(p, dk, base);  // after it: "" when untouched
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "call/call_layout.h"

namespace attncheck::zones {

using Extents = std::array<int64_t, 4>;

// [batch][head][row][col] of each tensor of the call.
inline Extents q_extents(const Shape& s) { return {s.batch, s.heads, s.q_len, s.head_dim}; }
inline Extents k_extents(const Shape& s) { return {s.batch, s.kv_head_count(), s.kv_len, s.head_dim}; }
inline Extents v_extents(const Shape& s) { return {s.batch, s.kv_head_count(), s.kv_len, s.value_dim}; }
inline Extents out_extents(const Shape& s) { return {s.batch, s.heads, s.q_len, s.value_dim}; }

inline bool has_gaps(const TensorLayout& l) { return l.gap[0] > 0 || l.gap[1] > 0 || l.gap[2] > 0; }

// The dtype's signalling-NaN marker: arithmetic only ever returns quiet NaNs,
// so a surviving marker means the element was never written.
void poison(DType t, uint8_t* dst, int64_t n);
bool is_poison(DType t, const uint8_t* src);

// The guard pattern (period CallLayout::kGuardBytes).
void fill_guard(uint8_t* dst, std::size_t n);
// Index of the first changed byte of a kGuardBytes guard zone, or -1.
long first_changed_guard(const uint8_t* g);

// Writes a logically row-major [e0][e1][e2][e3] tensor through strides; with
// `gaps`, the bytes of the span that hold no element get a NaN of the dtype first.
void encode_view(DType t, const std::vector<double>& src, const Extents& e, const int64_t* stride, bool gaps,
                 std::size_t span_bytes, uint8_t* dst);

// A packed input (ABI v3): row r of batch b of the logically row-major
// [e0][e1][e2][e3] tensor is written at packed row cu[b] + r for r < cu[b+1] -
// cu[b]; every other byte of the span (slack rows past cu[batch]) gets a NaN
// of the dtype first, as gaps do.
void encode_packed_view(DType t, const std::vector<double>& src, const Extents& e, const int64_t* stride,
                        const std::vector<int32_t>& cu, std::size_t span_bytes, uint8_t* dst);
// A packed side's strides, dense [total][heads][cols]: {0, cols, heads*cols, 1}.
inline std::array<int64_t, 4> packed_strides(int64_t heads, int64_t cols) { return {0, cols, heads * cols, 1}; }

// One output view: where its live elements are. Rows r >= the batch's length
// (q_lens, or kv_lens for a view whose rows are keys) are padding: guard
// bytes, like the gaps.
struct OutputView {
  std::size_t offset, span_bytes, element_bytes;
  Extents extents;
  int64_t stride[4];
  bool all_live;             // no gaps and no padding rows: the span is exactly the elements
  bool rows_are_keys = false;  // dk, dv: padding by kv_lens
  // For reports: a gradient names its elements "dk[b=0][h=1][j=2][d=0]";
  // nullptr keeps out's and lse's "[bh=1][i=2][c=0]".
  const char* name = nullptr;
  char row_axis = 'i', col_axis = 'c';
  // A packed view (ABI v3): cu [batch + 1] (the Problem's cu_seqlens), row r
  // of batch b at packed row cu[b] + r (stride[0] is 0); nullptr: padded.
  const int32_t* cu = nullptr;
};

// Rows of batch b that exist in the view.
int64_t live_rows_of(const Problem& p, const OutputView& view, int64_t b);
// Live elements of the view.
int64_t live_elements(const Problem& p, const OutputView& view);

OutputView out_view(const Problem& p, const CallLayout& l);
OutputView lse_view(const Problem& p, const CallLayout& l);
enum class GradTensor { dq, dk, dv };
inline constexpr GradTensor kGradTensors[] = {GradTensor::dq, GradTensor::dk, GradTensor::dv};
const char* grad_name(GradTensor which);  // "dq", "dk", "dv"
const CallLayout::GradZone& grad_zone_of(const CallLayout& l, GradTensor which);
OutputView grad_view(const Problem& p, const CallLayout& l, GradTensor which);

// Guards every non-live byte of the span and poisons every live element.
void prepare_output(const Problem& p, const OutputView& view, DType t, uint8_t* base);

// A gradient's zone as encoded: both guards, and its span prepared as above.
void prepare_grad_zone(const Problem& p, const CallLayout& l, GradTensor which, uint8_t* base);
// The first gradient ("dq", "dk", "dv") whose zone (guards and span) is no
// longer as prepare_grad_zone left it, or nullptr: for after forward, which is
// not given them.
const char* changed_grad_zone(const Problem& p, const CallLayout& l, const uint8_t* base);

// The first input (q, k, v, mask, bias, lengths, slopes, sinks, dout) that is
// no longer as encoded, named for a report ("the input tensor k"), or "".
std::string changed_input(const Problem& p, const CallLayout& l, const uint8_t* base);

// Checks the non-live bytes of an output span; "" when untouched, else
// "wrote into <name>'s allocation outside its elements (byte N, <which slot>)".
std::string changed_non_live(const Problem& p, const OutputView& view, const char* name, const uint8_t* base);

// The live elements of an output view decoded into a logically row-major
// vector (padding rows hold `padding`), and the poison left.
struct Decoded {
  std::vector<double> values;
  int64_t unwritten = 0;
  std::string first;  // where the first unwritten element is
};
Decoded decode_view(const Problem& p, const OutputView& view, DType t, const uint8_t* base, double padding);

}  // namespace attncheck::zones
