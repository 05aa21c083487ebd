// The float scales of the scaled formats (FP8_E4M3, FP8_E5M2, INT8, INT4), read as the ABI's
// attncheck_scale (include/attncheck/plugin_v3.h; docs/kv-formats.md): the scale of channel c
// of kv head h for batch entry b is data[b*stride[0] + h*stride[1] + c*stride[2]], strides >= 0,
// 0 broadcasting. b is the sequence that reads the key (with paging, not the page).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace attncheck {

// The same two fields as attncheck_scale, so a view of the ABI's struct converts field by field.
struct KvScale {
  const float* data = nullptr;
  int64_t stride[3]{};  // batch, kv head, channel
};

// The granularities the checker sends (the spec's table), each a dense array with strides:
//   per_tensor           [1]                      (0, 0, 0)       FlashInfer, vLLM k_scale
//   per_kv_head          [kv_heads]               (0, 1, 0)
//   per_batch_kv_head    [batch][kv_heads]        (kv_heads, 1, 0) FlashAttention-3 k_descale
//   per_kv_head_channel  [kv_heads][channels]     (0, channels, 1) ONNX Runtime PER_CHANNEL
enum class ScaleGranularity { per_tensor, per_kv_head, per_batch_kv_head, per_kv_head_channel };
inline constexpr ScaleGranularity kScaleGranularities[] = {
    ScaleGranularity::per_tensor, ScaleGranularity::per_kv_head, ScaleGranularity::per_batch_kv_head,
    ScaleGranularity::per_kv_head_channel};

std::string_view scale_granularity_name(ScaleGranularity g);
// The dense strides of granularity g over channels `channels` (head_dim for K, value_dim for V).
std::array<int64_t, 3> scale_strides(ScaleGranularity g, int64_t kv_heads, int64_t channels);
// Floats that dense array holds: 1, kv_heads, batch * kv_heads, kv_heads * channels.
int64_t scale_count(ScaleGranularity g, int64_t batch, int64_t kv_heads, int64_t channels);

// The scale of channel c of kv head h for batch entry b.
inline double scale_at(const KvScale& s, int64_t b, int64_t h, int64_t c) {
  return s.data[b * s.stride[0] + h * s.stride[1] + c * s.stride[2]];
}

// Empty when the strides are >= 0 and every scale of [batch][kv_heads][channels] is finite and
// > 0, as the spec requires; otherwise the first fault, naming (b, h, c) and the value.
std::string scale_inconsistency(const KvScale& s, int64_t batch, int64_t kv_heads, int64_t channels);

}  // namespace attncheck
