// window_equals_mask: a sliding window (window_left, window_right around the
// diagonal d_i) equals the explicit mask that hides the same keys.
//
// Catches: a window off by one (W keys instead of W + 1), aligned top-left
// where the spec aligns it bottom-right (q_len != kv_len), left and right
// exchanged, a window applied per tile rather than per key. Cannot catch: a
// fault in the mask path that the window path shares.
#include "law_framework/equivalent_calls.h"
#include "problem/feature_transforms.h"

namespace attncheck {

Law law_window_equals_mask() {
  Law law;
  law.name = "window_equals_mask";
  law.statement = "a sliding window equals the explicit mask that hides the same keys";
  law.features = kAllFeatures;
  law.required = ATTNCHECK_FEATURE_WINDOW | ATTNCHECK_FEATURE_MASK;
  law.check = [](Implementation& impl, const Problem& p) {
    if (p.window_left < 0 && p.window_right < 0) return Verdict::not_applicable("no window");
    return equivalent_calls(impl, p, with_window_as_mask(p), "window", "explicit mask");
  };
  return law;
}

}  // namespace attncheck
