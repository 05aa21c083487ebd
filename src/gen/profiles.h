// Shape profiles: named regions of shape space that `attncheck check
// --profile NAME` draws from, as GenOptions. Each stands for a way kernels are
// used (and specialised) in practice:
//   small    today's shapes: every extent up to 72, the classic value families
//   decode   q_len 1..8 against kv_len up to 16384 (a KV cache), kernel head dims
//   prefill  q_len = kv_len up to 4096, causal or not, no dense mask
//   chunked  q_len < kv_len with the bottom_right rule (chunked prefill)
//   default  mostly small, with decode (kv_len to 2048), prefill (to 160) and
//            chunked (48 x 384) shapes, and a few long rows (decode over 2,049
//            to 32,768 keys, prefill to 4,096, head_dim at most 16): one check
//            of one built-in takes seconds on 2 cores (docs/speed.md), well
//            within its 30 s budget; the long profiles are nightly
// Every profile but small also draws head_dim from kKernelHeadDims in a share
// of cases independent of the size ramp, and the values trained models produce.
// Every profile draws the shapes and inputs of the public bug reports now and
// then (GenOptions::report_shape_chance, kReportFamilies; docs/shapes.md), and
// caps the work of a case (GenOptions::max_case_work) so that a plain loop
// kernel stays far under the default per-call CPU limit.
//
// Example usage:
//   GenOptions g = profile_options(*find_profile("decode"));
//   g.dtypes = {DType::f16};
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "gen/gen_options.h"

namespace attncheck {

struct Profile {
  std::string_view name;
  std::string_view description;  // one line, for --help and `attncheck list`
  GenOptions (*options)();
};

std::span<const Profile> all_profiles();
const Profile* find_profile(std::string_view name);
// "small, decode, prefill, chunked, default"
std::string profile_names();

}  // namespace attncheck
