// no_timeout: the call returns within the per-call time limit.
// Catches: infinite loops (a tile loop that never advances on an edge shape),
// deadlocks, pathological slowness. Cannot catch: a fast wrong answer.
#include "law_framework/process_law.h"

namespace attncheck {

Law law_no_timeout() {
  return make_process_law("no_timeout", "the call returns within the per-call time limit", CallStatus::timeout);
}

}  // namespace attncheck
