// batch_invariance: under ABI version 3's
// ATTNCHECK_PROMISE_BATCH_INVARIANT, sequence b's out rows and lse are
// bit-identical between two forward calls that give b the same inputs,
// whatever else differs: batch, the other sequences, b's place in the batch,
// q_len and kv_len (docs/abi/plugin-abi-v3.md, "Promises"). Each sequence of
// the case is called alone (batch 1), then compared bit for bit with
//   1. its slice of a larger batch (up to 8) of companions, loud, of other
//      values and shorter, at a place drawn from the case
//      (law_framework/batch_composition.h, as batch_composition_independence
//      builds it);
//   2. for an implementation with lengths (LENGTHS), its slice of a batch of
//      another size and order whose bounds are larger (q_len by 1 to 7 rows,
//      kv_len by 128 to 191 keys, the sequences' own lengths given by
//      q_lens and kv_lens, loud values in the padding), against itself
//      alone with its lengths given (the promise compares calls that use the
//      same features).
// The drawn sequences hold 257 to 384 keys each (no lengths are drawn), so a
// kernel that splits its keys in blocks of up to 128 (FlashAttention 2's
// kBlockN, the common split-KV chunk) has at least three blocks and a split
// count derived from the batch or from kv_len can vary: a suite whose rows
// fit one block misses that bug (vllm#58131). Only an implementation that
// makes the promise is judged; any other is skipped with the reason
// (batch_composition_independence judges every implementation within the
// bound, and bit for bit one that makes this promise).
//
// Catches: split-KV counts or tile sizes chosen from the batch, the number of
// sequences or the bounds (outputs equal within the bound, different in the
// last bits: the vLLM and FlashInfer class of batch-dependent results);
// reductions across sequences; anything batch_composition_independence
// catches.
// Cannot catch: dependence on other pages, packed places, total_q/total_k or
// num_pages (the paged and packed variants come with those calls); a
// dependence on the bounds of a case with a mask or bias (masks are kept in
// call 1 only: their shape follows the bounds); batch-dependence that appears
// only beyond 8 sequences or only for keys past 384.
#include <algorithm>
#include <sstream>

#include "law_framework/batch_composition.h"
#include "law_framework/law_support.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

// The largest key block the law assumes a kernel splits by (see above), and
// the shortest rows it draws: past two such blocks.
constexpr int64_t kKeyBlock = 128;
constexpr int64_t kBatchInvarianceMaxBatch = 8;

// Part (batch 1) with bounds q_len and kv_len >= its own: its rows and keys
// kept, its lengths given (q_lens, kv_lens), the new padding rows and keys
// holding `pad` (a loud value: it must change nothing).
Problem with_bounds(const Problem& part, int64_t q_len, int64_t kv_len, double pad) {
  const Shape& s = part.shape;
  Problem r = part;
  r.shape.q_len = q_len, r.shape.kv_len = kv_len;
  r.q.assign(static_cast<std::size_t>(s.heads * q_len * s.head_dim), pad);
  r.k.assign(static_cast<std::size_t>(s.kv_head_count() * kv_len * s.head_dim), pad);
  r.v.assign(static_cast<std::size_t>(s.kv_head_count() * kv_len * s.value_dim), pad);
  for (int64_t h = 0; h < s.heads; ++h)
    for (int64_t i = 0; i < s.q_len; ++i)
      std::copy_n(part.q.begin() + part.q_at(h, i, 0), s.head_dim, r.q.begin() + r.q_at(h, i, 0));
  for (int64_t h = 0; h < s.kv_head_count(); ++h)
    for (int64_t j = 0; j < s.kv_len; ++j) {
      std::copy_n(part.k.begin() + part.k_at(h, j, 0), s.head_dim, r.k.begin() + r.k_at(h, j, 0));
      std::copy_n(part.v.begin() + part.v_at(h, j, 0), s.value_dim, r.v.begin() + r.v_at(h, j, 0));
    }
  r.q_lens = {static_cast<int32_t>(part.q_len_of(0))};
  r.kv_lens = {static_cast<int32_t>(part.kv_len_of(0))};
  return r;
}

// Runs `composed` and compares each of the case's sequences (alone[b], run as
// ones[b]) with its slice at at[b], bit for bit; the failure, or nullopt.
std::optional<Verdict> compare_slices(Implementation& impl, const Problem& composed, const std::vector<int64_t>& at,
                                      const std::vector<Problem>& alone, const std::vector<Outcome>& ones,
                                      const std::string& how, int64_t& judged) {
  const Outcome whole = impl.run(composed);
  if (auto bad = unusable(whole)) return *bad;
  for (std::size_t b = 0; b < alone.size(); ++b)
    if (auto m = entry_mismatch(composed, whole, at[b], alone[b], ones[b], nullptr, judged)) {
      std::ostringstream what;
      what << "sequence " << b << " of the case, at position " << at[b] << " of " << how << " (batch "
           << composed.shape.batch << ", q_len " << composed.shape.q_len << ", kv_len " << composed.shape.kv_len
           << "), differs from the same sequence alone " << *m
           << "; ATTNCHECK_PROMISE_BATCH_INVARIANT promises every bit";
      return Verdict::fail(what.str()).on(
          {{"composed", how, composed}, {"alone", "sequence " + std::to_string(b) + " of the case alone", alone[b]}});
    }
  return std::nullopt;
}

}  // namespace

Law law_batch_invariance() {
  Law law;
  law.name = "batch_invariance";
  law.statement = "ABI v3 promise BATCH_INVARIANT: each sequence (257 keys or more) alone is bitwise its slice of "
                  "other batches, at other places, with other bounds";
  // Drawn without lengths: every drawn sequence has all its keys (the law
  // adds lengths itself, in its second call).
  law.features = kAllFeatures & ~ATTNCHECK_FEATURE_LENGTHS;
  law.required_promises = ATTNCHECK_PROMISE_BATCH_INVARIANT;
  law.cheap = false;  // up to 2 * batch + 2 calls of rows of 257 to 384 keys
  law.tailor = [](GenOptions& g) {
    g.domains.clear();  // the profiles' domains end at 72 keys
    g.min_kv_len = 2 * kKeyBlock + 1, g.max_kv_len = 3 * kKeyBlock;
    g.min_q_len = 1, g.max_q_len = std::clamp<int64_t>(g.max_q_len, 1, 12);
    g.max_batch = std::min<int64_t>(g.max_batch, 3), g.min_batch = std::min(g.min_batch, g.max_batch);
    g.max_heads = std::min<int64_t>(g.max_heads, 3), g.min_heads = std::min(g.min_heads, g.max_heads);
  };
  law.check = [](Implementation& impl, const Problem& p) {
    const Shape& s = p.shape;
    const uint64_t salt = problem_fingerprint(p);
    const bool lengths = (impl.features() & ATTNCHECK_FEATURE_LENGTHS) != 0;
    const double loud = loud_value(p);
    std::vector<Problem> alone;
    std::vector<Outcome> ones;
    for (int64_t b = 0; b < s.batch; ++b) {
      alone.push_back(entry_alone(p, b));
      ones.push_back(impl.run(alone.back()));
      if (auto bad = unusable(ones.back())) return *bad;
    }
    int64_t judged = 0;
    // 1. Among companions, at places drawn from the case.
    const int64_t first_size = std::min<int64_t>(kBatchInvarianceMaxBatch, s.batch + 2 + static_cast<int64_t>(salt % 4));
    std::vector<Problem> parts = alone;
    // No shorter companions here: their lengths would put LENGTHS in use in
    // the composed call and not in the alone one.
    for (Problem& c : companions(alone, loud, false, salt, first_size)) parts.push_back(std::move(c));
    std::vector<int64_t> at;
    Problem composed = placed_batch(parts, mixing_permutation(static_cast<int64_t>(parts.size()), salt >> 3), at);
    at.resize(alone.size());
    if (auto v = compare_slices(impl, composed, at, alone, ones, "a batch of companions (loud, other values, shorter)",
                                judged))
      return *v;
    // 2. Other bounds, another batch size and order (lengths needed to keep
    // the sequence's rows and keys as they are), when no mask or bias ties
    // the shape to the bounds.
    if (lengths && !p.has_mask() && !p.has_bias()) {
      const int64_t q_len = s.q_len + 1 + static_cast<int64_t>((salt >> 11) % 7);
      const int64_t kv_len = s.kv_len + kKeyBlock + static_cast<int64_t>((salt >> 17) % 64);
      const int64_t second_size = first_size > s.batch + 1 ? s.batch + 1 : first_size + 1;
      std::vector<Problem> alone_bounded, bounded;
      std::vector<Outcome> ones_bounded;
      for (const Problem& a : alone) {
        alone_bounded.push_back(with_bounds(a, a.shape.q_len, a.shape.kv_len, loud));
        ones_bounded.push_back(impl.run(alone_bounded.back()));
        if (auto bad = unusable(ones_bounded.back())) return *bad;
        bounded.push_back(with_bounds(a, q_len, kv_len, loud));
      }
      for (const Problem& c : companions(alone, loud, true, salt ^ 0x5bd1e995u, second_size))
        bounded.push_back(with_bounds(c, q_len, kv_len, loud));
      std::vector<int64_t> at2;
      const Problem rebounded =
          placed_batch(bounded, mixing_permutation(static_cast<int64_t>(bounded.size()), salt >> 23), at2);
      at2.resize(alone.size());
      if (auto v = compare_slices(impl, rebounded, at2, alone_bounded, ones_bounded,
                                  "a batch with larger bounds and its lengths given", judged))
        return *v;
    }
    if (judged == 0) return Verdict::not_applicable("no row of any sequence exists");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
