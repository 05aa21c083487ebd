#include "problem/kv_scale.h"

#include <cmath>

#include "problem/number_text.h"

namespace attncheck {

std::string_view scale_granularity_name(ScaleGranularity g) {
  switch (g) {
    case ScaleGranularity::per_tensor: return "per_tensor";
    case ScaleGranularity::per_kv_head: return "per_kv_head";
    case ScaleGranularity::per_batch_kv_head: return "per_batch_kv_head";
    case ScaleGranularity::per_kv_head_channel: return "per_kv_head_channel";
  }
  return "?";
}

std::array<int64_t, 3> scale_strides(ScaleGranularity g, int64_t kv_heads, int64_t channels) {
  switch (g) {
    case ScaleGranularity::per_tensor: return {0, 0, 0};
    case ScaleGranularity::per_kv_head: return {0, 1, 0};
    case ScaleGranularity::per_batch_kv_head: return {kv_heads, 1, 0};
    case ScaleGranularity::per_kv_head_channel: return {0, channels, 1};
  }
  return {0, 0, 0};
}

int64_t scale_count(ScaleGranularity g, int64_t batch, int64_t kv_heads, int64_t channels) {
  switch (g) {
    case ScaleGranularity::per_tensor: return 1;
    case ScaleGranularity::per_kv_head: return kv_heads;
    case ScaleGranularity::per_batch_kv_head: return batch * kv_heads;
    case ScaleGranularity::per_kv_head_channel: return kv_heads * channels;
  }
  return 0;
}

std::string scale_inconsistency(const KvScale& s, int64_t batch, int64_t kv_heads, int64_t channels) {
  if (s.data == nullptr) return "the scale's data is null";
  for (int axis = 0; axis < 3; ++axis)
    if (s.stride[axis] < 0)
      return "the scale's stride[" + std::to_string(axis) + "] is " + std::to_string(s.stride[axis]) +
             " (strides are >= 0)";
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < kv_heads; ++h)
      for (int64_t c = 0; c < channels; ++c) {
        const double x = scale_at(s, b, h, c);
        if (!(std::isfinite(x) && x > 0))
          return "the scale of (batch " + std::to_string(b) + ", kv head " + std::to_string(h) + ", channel " +
                 std::to_string(c) + ") is " + shortest_text(x, DType::f32) + " (every scale is finite and > 0)";
      }
  return {};
}

}  // namespace attncheck
