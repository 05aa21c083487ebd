// Which of the requested dtypes an implementation offers, asked before any
// law runs so the generator only draws calls it can answer: one tiny valid
// call per dtype (a few shapes, in case an implementation only takes some
// head sizes). A dtype is dropped only when every probe answered
// ATTNCHECK_UNSUPPORTED; an error, crash or bad write keeps it, because then
// the laws must judge it.
//
// Example usage:
//   DTypeProbe probe = probe_dtypes(impl, {DType::f32, DType::f16});
//   if (probe.supported.empty()) ...  // the implementation supports none of the requested calls
#pragma once

#include <optional>

#include <string>
#include <vector>

#include "impls/implementation.h"

namespace attncheck {

struct DroppedDType {
  DType dtype;
  std::string message;  // the implementation's err text from the last probe call
};

struct DTypeProbe {
  std::vector<DType> supported;  // in the order requested
  std::vector<DroppedDType> dropped;
  // The first probe call that crashed, hung or wrote where it must not (its
  // dtype is kept: the laws must judge it); reported by its process law.
  std::optional<Problem> fault_case;
  CallStatus fault_status = CallStatus::ok;
  std::string fault_message;
};

// "f16 dropped: every probe call answered ATTNCHECK_UNSUPPORTED (<message>)"
std::string describe(const DroppedDType& d);

DTypeProbe probe_dtypes(Implementation& impl, const std::vector<DType>& requested);

}  // namespace attncheck
