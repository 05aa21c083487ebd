// Which shapes an implementation accepts, learned before any law runs so that
// the generator draws only calls it can answer, and the report says what the
// verdict covers. Kernels specialised for a few head dims, decode kernels that
// take q_len = 1 only, and tiled kernels without a remainder path answer
// ATTNCHECK_UNSUPPORTED to everything else; without this, nearly every
// generated case would be unsupported and the laws would judge almost nothing.
//
// One tiny call per candidate (about 40 calls in all). A candidate counts as
// accepted unless the call answers ATTNCHECK_UNSUPPORTED: an error, a crash or
// a wrong output is for the laws to judge.
//
// Example usage:
//   ShapeFindings f = probe_shapes(impl, DType::f32);
//   restrict_to(options.gen, f);
//   out << f.describe();  // "head_dim in {64, 128}; q_len 1 only"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "impls/implementation.h"
#include "gen/gen_options.h"

namespace attncheck {

struct ShapeFindings {
  bool any_accepted = false;       // some probe call was answered (else nothing can be checked)
  std::vector<int64_t> head_dims;  // the accepted candidates; empty when every candidate was
  bool q_len_one_only = false;
  bool same_dims = false;          // value_dim must equal head_dim
  int64_t q_len_multiple = 1, kv_len_multiple = 1;
  // The first call that crashed, hung or wrote where it must not: probing stops
  // there (learning nothing more, so restricting nothing it did not see) and the
  // fault is reported by its process law.
  std::optional<Problem> fault_case;
  CallStatus fault_status = CallStatus::ok;
  std::string fault_message;

  bool restricts() const;
  // What was learned, e.g. "head_dim in {128}; value_dim = head_dim"; "" when nothing restricts.
  std::string describe() const;
};

ShapeFindings probe_shapes(Implementation& impl, DType dtype);

// Draw only what the findings say the implementation accepts.
void restrict_to(GenOptions& g, const ShapeFindings& f);

}  // namespace attncheck
