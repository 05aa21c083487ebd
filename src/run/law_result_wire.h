// A LawResult as bytes, to carry it from a worker process of `check --jobs N`
// back to the parent (parallel_check.h). Exact: doubles travel as their bits
// (NaN payloads, signed zeros, infinities included), so a result read back is
// the result the worker had, and the reports do not depend on N. Both ends are
// the same program, so the layout is native and unversioned.
//
// Example usage:
//   std::string bytes = encode_law_result(l);
//   LawResult back;
//   if (!decode_law_result(bytes, back)) ...  // truncated or garbled
#pragma once

#include <string>
#include <string_view>

#include "report/run_report.h"

namespace attncheck {

std::string encode_law_result(const LawResult& l);
// False when `bytes` is not exactly one encoded LawResult.
bool decode_law_result(std::string_view bytes, LawResult& l);

}  // namespace attncheck
