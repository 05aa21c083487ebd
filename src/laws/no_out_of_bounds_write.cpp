// no_out_of_bounds_write: the call writes nothing outside `out`: the guard
// zones around it and the input tensors are byte-for-byte unchanged.
// Catches: tile tails written past the end, wrong strides, inputs used as
// scratch. Cannot catch: reads out of bounds, or writes that land inside out
// (those show as wrong values to the arithmetic laws).
#include "law_framework/process_law.h"

namespace attncheck {

Law law_no_out_of_bounds_write() {
  return make_process_law("no_out_of_bounds_write", "the call writes nothing outside out, inputs included",
                          CallStatus::out_of_bounds_write);
}

}  // namespace attncheck
