// The laws a fuzz target judges every drawn problem by, and the loop that
// judges them: a failing law (or a crash, hang or bad write while a law ran)
// becomes a finding (finding.h); pass, not_applicable and unsupported go on.
//
// ATTNCHECK_FUZZ_LAWS=name,name narrows a target's list (to chase one law
// overnight, or to replay a crash input under gdb with less noise);
// ATTNCHECK_FUZZ_SKIP_LAWS=name,name leaves laws out (a known finding, while hunting for others).
//
// One input judges one (implementation, law) pair, picked by its first two
// bytes: every law on every implementation would cost hundreds of calls per
// input (a few hundred execs/s); one pair keeps the work per input bounded and
// lets coverage guidance steer towards the laws whose code it reaches.
// ATTNCHECK_FUZZ_ALL=1 judges every pair on each input instead (exhaustive replays).
//
// Example usage:
//   static const std::vector<const Law*> laws = differential_laws();
//   static const auto impls = references();
//   const Pick pick = pick_pair(impls, laws, data, size);   // consumes the first two bytes
//   for (Implementation* impl : pick.impls)
//     judge(*impl, fuzz_problem(data, size, impl->features()), pick.laws);
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

#include "impls/implementation.h"
#include "law_framework/law.h"

namespace attncheck::fuzz {

// matches_oracle, then every other law with Law::cheap, in catalogue order.
std::vector<const Law*> differential_laws();

// The laws of these names that the catalogue has; a missing name is reported
// on stderr once and left out (the catalogue may grow after a target was written).
std::vector<const Law*> laws_named(std::initializer_list<std::string_view> names);

// The built-in references (reference, naive, online): correct implementations
// that every law must pass.
std::vector<std::unique_ptr<Implementation>> references();

// The references that have a backward (kBackwardFeature among their features).
std::vector<std::unique_ptr<Implementation>> backward_references();

// fuzz_gradients' judges: nullptr first, which stands for the gradient oracle
// (the target compares with grad_oracle itself; ATTNCHECK_FUZZ_LAWS names it
// grad_matches_oracle), then every cheap law about gradients (Law::required
// has kBackwardFeature) but grad_matches_oracle, in catalogue order.
std::vector<const Law*> gradient_judges();

struct Pick {
  std::vector<Implementation*> impls;
  std::vector<const Law*> laws;
};
// Byte 0 picks the implementation (byte % count), byte 1 the law: below 64,
// laws[0] (a quarter of the inputs: matches_oracle in the differential targets),
// else one of the others. Missing bytes read as zero. Advances data/size past them.
Pick pick_pair(const std::vector<std::unique_ptr<Implementation>>& impls, const std::vector<const Law*>& laws,
               const uint8_t*& data, std::size_t& size);

// Judges p by every law; on a failure or fault it reports and aborts.
void judge(Implementation& impl, const Problem& p, const std::vector<const Law*>& laws);

}  // namespace attncheck::fuzz
