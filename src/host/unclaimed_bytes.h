// The bytes of the shared region that belong to no tensor and no guard zone
// of a call (call/call_layout.h): the alignment gaps between q, k, v and
// mask (and between the output zones), and everything after the last guard up
// to the end of the region. The
// child can write them as easily as out, so before each call they are filled
// with a known pattern and after it they are checked, like the guards.
//
// Example usage (plugin_host.cpp):
//   const auto spans = unclaimed_spans(layout, region.size());
//   fill_unclaimed(region.data(), spans);   // before the call
//   ... the call ...
//   if (long at = first_changed_unclaimed(region.data(), spans); at >= 0) ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "call/call_layout.h"

namespace attncheck {

struct ByteSpan {
  std::size_t begin = 0, end = 0;  // [begin, end) in the region
};

std::vector<ByteSpan> unclaimed_spans(const CallLayout& layout, std::size_t region_size);
void fill_unclaimed(uint8_t* base, const std::vector<ByteSpan>& spans);
// Offset in the region of the first changed byte, or -1.
long first_changed_unclaimed(const uint8_t* base, const std::vector<ByteSpan>& spans);

}  // namespace attncheck
