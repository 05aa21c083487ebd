// writes_every_output: after a successful call no element of `out` still
// holds the poison pattern written before it.
// Catches: skipped rows (fully masked rows or tile remainders left untouched),
// loops over the wrong extent. Cannot catch: an element written with a wrong
// value (the arithmetic laws judge that).
#include "law_framework/process_law.h"

namespace attncheck {

Law law_writes_every_output() {
  return make_process_law("writes_every_output", "a successful call writes every element of out",
                          CallStatus::unwritten_output);
}

}  // namespace attncheck
