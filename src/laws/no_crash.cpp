// no_crash: the call returns; the process is never killed by a signal.
// Catches: segfaults, aborts, uncaught exceptions, stack overflows on large
// shapes. Cannot catch: a wrong result computed quietly (the other laws).
#include "law_framework/process_law.h"

namespace attncheck {

Law law_no_crash() {
  return make_process_law("no_crash", "the call returns instead of killing the process", CallStatus::crash);
}

}  // namespace attncheck
