// Fuzzer bytes -> Problem: the one decoder every problem-taking fuzz target
// shares, so a saved input means the same call in every target.
//
// Every byte sequence decodes to a consistent Problem (missing bytes read as
// zero). Shapes stay small by default so that one input costs well under a
// millisecond; the caps come from the environment, read once:
//   ATTNCHECK_FUZZ_MAX_BATCH (2), ATTNCHECK_FUZZ_MAX_HEADS (2),
//   ATTNCHECK_FUZZ_MAX_LEN (6: q_len and kv_len), ATTNCHECK_FUZZ_MAX_DIM (6: head_dim and value_dim).
// Tensor elements are drawn from a palette of edge values of the dtype (±0,
// subnormals, smallest/largest normals, ±inf, NaN, 1, logits hundreds apart)
// mixed with raw bit patterns of the dtype, so every representable value is reachable.
//
// The byte layout (FuzzedDataProvider reads integers from the end of the
// input; fuzz/make_seed_corpus.py mirrors it to write seeds), in reading order:
//   dtype, batch, heads, q_len, kv_len, head_dim, value_dim, causal, scale, mask, then
//   q, k, v element by element, then the mask bits, then the ABI v2 fields:
//   a 16-bit word of the ATTNCHECK_FEATURE_* bits present, and each present
//   field's bytes (problem_decoder.cpp, decode_features: kv_heads, layouts with
//   odd gaps, lengths and their padding, window, softcap, bias, ALiBi, sinks,
//   lse, a broadcast mask). Missing bytes are zero and zero is "none", so an
//   input from before v2 decodes to the call it always meant. A backward
//   problem (decode_backward_problem) reads dout and the gradient views after them.
// The v2 fields (and MASK, CAUSAL) outside `allowed` are read and dropped:
// pass the features of the implementation under test.
//
// Example usage:
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
//     const Problem p = decode_problem(data, size, ValueMix::any, impl.features());
//     ...
//   }
#pragma once

#include <cstddef>
#include <cstdint>

#include "problem/problem.h"

namespace attncheck::fuzz {

// Caps on each extent of a decoded problem.
struct DecoderLimits {
  int64_t max_batch = 2, max_heads = 2, max_len = 6, max_dim = 6;
  // The defaults overridden by ATTNCHECK_FUZZ_MAX_* (read on the first call, then kept).
  static const DecoderLimits& from_env();
};

enum class ValueMix {
  any,          // palette (finite or not) and raw bit patterns
  finite_only,  // the same, with non-finite values folded to ±max_finite: every input finite
};

// A forward problem (the backward bit in `allowed` is ignored: a target that
// passes impl.features() keeps decoding the calls it always did).
Problem decode_problem(const uint8_t* data, std::size_t size, ValueMix mix, FeatureBits allowed = kV1Features,
                       const DecoderLimits& limits = DecoderLimits::from_env());

// A backward problem: the forward problem decode_problem makes of the same
// bytes, then dout [batch][heads][q_len][value_dim] element by element, what
// its padding rows hold, and the gradient views (problem_decoder.cpp,
// decode_gradients; the views only when `allowed` has STRIDES). Always
// backward, whatever `allowed` says of kBackwardFeature.
//
// Example usage (fuzz_gradients.cpp):
//   const Problem p = decode_backward_problem(data, size, ValueMix::any, impl.features());
Problem decode_backward_problem(const uint8_t* data, std::size_t size, ValueMix mix, FeatureBits allowed = kV1Features,
                                const DecoderLimits& limits = DecoderLimits::from_env());

}  // namespace attncheck::fuzz
