#include "problem/kv_numerics.h"

#include <cmath>
#include <sstream>

namespace attncheck {

namespace {

bool numerics_block_format(KvFormat f) { return f == KvFormat::q8_0 || f == KvFormat::q4_0; }
bool numerics_sixteen_bit_format(KvFormat f) {
  return f == KvFormat::f16 || f == KvFormat::bf16 || numerics_block_format(f);
}

}  // namespace

int64_t numerics_that_apply(const Problem& p, int64_t declared) {
  int64_t out = 0;
  if ((declared & kNumericsQAsQ8_0) && numerics_block_format(p.k_format)) out |= kNumericsQAsQ8_0;
  if ((declared & kNumericsKvPrecision) && p.dtype == DType::f32 &&
      (numerics_sixteen_bit_format(p.k_format) || numerics_sixteen_bit_format(p.v_format)))
    out |= kNumericsKvPrecision;
  return out;
}

std::string numerics_inconsistency(const Problem& p) {
  if (p.numerics == 0) return "";
  if (p.numerics & ~kJudgedNumerics)
    return "numerics " + std::to_string(p.numerics) +
           " holds a bit the bound does not widen by yet (only 1, ATTNCHECK_NUMERICS_Q_AS_Q8_0, is judged)";
  if (numerics_that_apply(p, p.numerics) != p.numerics)
    return "numerics " + std::to_string(p.numerics) +
           " holds a bit that does not apply to the call (Q_AS_Q8_0 needs k_format q8_0 or q4_0)";
  for (std::size_t at = 0; at < p.q.size(); ++at)
    if (!(std::abs(p.q[at]) < kNumericsQueryLimit)) {
      std::ostringstream os;
      os << "numerics " << p.numerics << " but q[" << at << "] = " << p.q[at]
         << " is not finite and below 2^15 in magnitude (the spec's precondition for a call where a numerics bit applies)";
      return os.str();
    }
  return "";
}

}  // namespace attncheck
