// key_permutation_invariance: attention is a sum over keys, so permuting the
// keys (rows of K and V and columns of the mask, together) leaves the output
// unchanged. A causal rule is first turned into the equivalent explicit mask
// (exact), so the law applies to every problem with at least two keys; both
// calls then use that mask, and the causal code path itself is left to
// causal_equals_explicit_mask.
//
// Catches: a key treated by its position rather than its content (the last key
// or the last tile dropped or counted twice, tile-boundary errors in streaming
// softmax), a mask column applied to the wrong key (mask transposed, stride of
// kv_len vs q_len confused), K and V rows read with different strides.
// Cannot catch: faults symmetric in the keys (wrong scale, no max subtraction,
// K and V swapped, a mask ignored altogether).
#include "law_framework/law_support.h"
#include "problem/transforms.h"

namespace attncheck {

Law law_key_permutation_invariance() {
  Law law;
  law.name = "key_permutation_invariance";
  law.statement = "permuting the keys (K rows, V rows, mask columns together) leaves the output unchanged";
  law.check = [](Implementation& impl, const Problem& given) {
    if (given.shape.kv_len < 2) return Verdict::not_applicable("a single key has no other order");
    const Problem p = with_causal_as_mask(given);
    const Problem moved = with_keys_permuted(p, mixing_permutation(p.shape.kv_len, problem_fingerprint(p)));
    std::vector<double> out, out_moved;
    if (auto bad = run_for(impl, p, out)) return *bad;
    if (auto bad = run_for(impl, moved, out_moved)) return *bad;
    if (auto m = mismatch(p, out, oracle(p).bound, out_moved, oracle(moved).bound, "keys in order", "keys permuted"))
      return Verdict::fail(*m).on({{"keys in order", "", p},
                                   {"keys permuted", "that call with its keys (k, v rows, mask columns) permuted", moved}});
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
