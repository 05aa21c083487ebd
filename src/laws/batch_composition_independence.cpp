// batch_composition_independence: a sequence's attention depends on that
// sequence alone. Each sequence of the case, computed alone (batch 1), agrees
// with its slice of a larger batch in which it is composed with other
// sequences: a loud one (every logit thousands above the case's), ones of other
// values, and, for an implementation with per-batch lengths, shorter ones whose
// padding holds loud values; the case's sequences land at positions drawn from
// the case, in a batch of up to 8.
//
// Within the bound: the sequence's rows are the same rows in both calls, so
// each side may be off by the oracle's bound for them (docs/tolerance.md) and
// the two may differ by twice it. Bit for bit for an implementation that
// promises batch invariance (ABI version 3's ATTNCHECK_PROMISE_BATCH_INVARIANT:
// promises_batch_invariance below). The composition itself is
// law_framework/batch_composition.h's.
//
// Catches what cutting the drawn batch apart (batch_head_independence,
// lengths_equal_slices) cannot: per-batch offsets wrong only past the drawn
// batch sizes (the profiles draw at most 3 sequences) or only where a
// neighbour is longer or shorter, and cross-sequence contamination that needs
// a neighbour unlike the sequence: a softmax max shared across the batch (the
// loud neighbour makes a quiet sequence's exp underflow), lengths or scales of
// one sequence applied to another, padding of a neighbour read.
// Cannot catch: faults every sequence shares (they cancel in the comparison;
// matches_oracle judges those), nor contamination by a kind of neighbour it
// does not build (a neighbour of another shape, which the ABI cannot express
// in one call).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "law_framework/batch_composition.h"
#include "law_framework/law_support.h"
#include "problem/dtype.h"
#include "problem/number_text.h"
#include "problem/transforms.h"

namespace attncheck {

namespace {

// The most sequences a composed call holds, and the work (multiply-adds of the
// logits and of P V) beyond which it holds only the case's sequences and one
// loud neighbour, so that long rows stay affordable.
constexpr int64_t kMaxComposedBatch = 8;
constexpr int64_t kMaxComposedWork = int64_t{1} << 24;

// ABI version 3 lets an implementation promise batch invariance
// (ATTNCHECK_PROMISE_BATCH_INVARIANT): its output for a sequence is the same
// to the bit whatever else is in the batch. Such an implementation is held to
// it here too; batch_invariance adds other bounds and long rows.
bool promises_batch_invariance(const Implementation& impl) {
  return (impl.promises() & ATTNCHECK_PROMISE_BATCH_INVARIANT) != 0;
}

}  // namespace

Law law_batch_composition_independence() {
  Law law;
  law.name = "batch_composition_independence";
  // The work cap of its cases (GenOptions::case_calls): each of up to 2 sequences alone, and a composed call of them with at least one neighbour (at long rows kMaxComposedWork leaves just that).
  law.tailor = [](GenOptions& g) { g.case_calls = 5; };
  law.statement = "each sequence alone agrees with its slice of a larger batch of other sequences (loud, shorter, "
                  "other values, other positions)";
  law.features = kAllFeatures;
  law.cheap = false;  // the case's sequences alone, and a call of up to 8 sequences
  law.check = [](Implementation& impl, const Problem& p) {
    const Shape& s = p.shape;
    const uint64_t salt = problem_fingerprint(p);
    std::vector<Problem> alone;
    for (int64_t b = 0; b < s.batch; ++b) alone.push_back(entry_alone(p, b));
    const bool lengths = (impl.features() & ATTNCHECK_FEATURE_LENGTHS) != 0;
    const int64_t work = s.heads * s.q_len * s.kv_len * (s.head_dim + s.value_dim);
    const int64_t fewest = s.batch + 1;
    const int64_t target = std::clamp<int64_t>(kMaxComposedWork / std::max<int64_t>(work, 1), fewest,
                                               std::min<int64_t>(kMaxComposedBatch, 5 + static_cast<int64_t>(salt % 4)));
    // An implementation that refuses a batch that large (the probe does not
    // learn batch limits) is asked for the case's sequences and one loud
    // neighbour; one that refuses that too leaves the case unjudged.
    std::vector<Problem> parts;
    std::vector<int64_t> at;
    Problem composed;
    Outcome whole;
    for (int64_t size : {target, fewest}) {
      parts = alone;
      for (Problem& c : companions(alone, loud_value(p), lengths, salt, size)) parts.push_back(std::move(c));
      composed = placed_batch(parts, mixing_permutation(static_cast<int64_t>(parts.size()), salt >> 3), at);
      whole = impl.run(composed);
      if (whole.status != CallStatus::unsupported || size == fewest) break;
    }
    if (auto bad = unusable(whole)) return *bad;
    const bool bitwise = promises_batch_invariance(impl);
    int64_t judged = 0;
    for (int64_t b = 0; b < s.batch; ++b) {
      const Problem& one_p = alone[static_cast<std::size_t>(b)];
      const Outcome one = impl.run(one_p);
      if (auto bad = unusable(one)) return *bad;
      const std::optional<OracleResult> one_o = bitwise ? std::nullopt : std::optional<OracleResult>(oracle(one_p));
      const int64_t pos = at[static_cast<std::size_t>(b)];
      if (auto m = entry_mismatch(composed, whole, pos, one_p, one, one_o ? &*one_o : nullptr, judged)) {
        std::ostringstream what, how;
        what << "sequence " << b << " of the case, at position " << pos << " of a composed batch of " << parts.size()
             << ", differs from the same sequence alone " << *m;
        how << "sequence " << b << " of the case alone (batch 1)";
        return Verdict::fail(what.str()).on({{"composed", "the case's sequences at positions drawn from it among " +
                                                              std::to_string(parts.size() - alone.size()) +
                                                              " companion sequences (loud, shorter, other values)",
                                              composed},
                                             {"alone", how.str(), one_p}});
      }
    }
    if (judged == 0) return Verdict::not_applicable("no row of any sequence is judged by the oracle's bound");
    return Verdict::pass();
  };
  return law;
}

}  // namespace attncheck
