// Predictions taken from the oracle of the problem that expresses a fault
// (what the fault-model tables build on, diagnosis-internal), also where that
// problem reads NaN or huge values (gaps of a strided view, padding keys).
#pragma once

#include "diagnosis/fault_models.h"
#include "problem/problem.h"

namespace attncheck {

// The oracle of `expressed` (out and lse) with rows that see no key judged as
// the ABI's zeros (and -inf lse without sinks).
Prediction by_oracle(const Problem& expressed);

// The prediction of an ABI v2 fault from the problem expressing it, which
// may read what a correct call never reads (NaN or huge values in gaps and
// padding, another head's keys). NaN is carried as IEEE arithmetic carries
// it: in a row that sees a key, a NaN in its q, or in k or the bias of a key
// it sees, makes the whole row NaN (its logits are); a NaN in column c of a
// seen key's v makes output column c NaN (weight * NaN, even for a weight
// that underflows). Those elements are predicted NaN (bound 0). The rest is
// the oracle of the problem with every NaN input replaced by 0, except in
// rows outside its representable domain: what the fault gives there depends
// on the order of its arithmetic, so they are free (bound NaN).
Prediction by_fault_oracle(const Problem& expressed);

}  // namespace attncheck
