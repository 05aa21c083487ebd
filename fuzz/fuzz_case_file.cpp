// fuzz_case_file: case_from_json on arbitrary bytes. A damaged or hostile case
// file must be refused with CaseFileError, never crash, never throw anything
// else, and never allocate by what a header claims before the text backs it
// (run with -malloc_limit_mb, see fuzz_case_file.options: a shape of 2^26
// elements in a few bytes of JSON must not reach the allocator).
// A file that parses must hold a consistent Problem and survive
// case_to_json -> case_from_json unchanged (bit for bit; NaN keeps its sign).
//
// Run: build-fuzz/fuzz/fuzz_case_file -dict=fuzz/dicts/case_file.dict -malloc_limit_mb=128 fuzz/corpus/fuzz_case_file
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "casefile/case_file.h"
#include "finding.h"

using namespace attncheck;

namespace {

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

bool same_tensor(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t n = 0; n < a.size(); ++n)
    if (!same_value(a[n], b[n])) return false;
  return true;
}

// Where two problems differ, or "" when they are the same call.
std::string difference(const Problem& a, const Problem& b) {
  if (a.dtype != b.dtype) return "dtype";
  if (!(a.shape == b.shape)) return "shape";
  if (a.causal != b.causal) return "causal";
  if (std::isnan(a.scale) != std::isnan(b.scale) || (!std::isnan(a.scale) && !same_value(a.scale, b.scale)))
    return "scale";
  if (!same_tensor(a.q, b.q)) return "q";
  if (!same_tensor(a.k, b.k)) return "k";
  if (!same_tensor(a.v, b.v)) return "v";
  if (a.mask != b.mask) return "mask";
  if (a.has_mask() && !(a.mask_broadcast == b.mask_broadcast)) return "mask_broadcast";
  if (!same_tensor(a.bias, b.bias)) return "bias";
  if (a.has_bias() && !(a.bias_broadcast == b.bias_broadcast)) return "bias_broadcast";
  if (a.q_lens != b.q_lens) return "q_lens";
  if (a.kv_lens != b.kv_lens) return "kv_lens";
  if (a.window_left != b.window_left || a.window_right != b.window_right) return "window";
  if (!same_value(a.softcap, b.softcap)) return "softcap";
  if (!same_tensor(a.alibi_slopes, b.alibi_slopes)) return "alibi_slopes";
  if (!same_tensor(a.sinks, b.sinks)) return "sinks";
  if (a.lse_requested != b.lse_requested) return "lse_requested";
  if (!(a.layouts == b.layouts)) return "layouts";
  return "";
}

}  // namespace

// The shape variables are for the targets that draw problems: said, not silently ignored
// (overnight.sh runs every target with the same environment).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const char* name : {"ATTNCHECK_FUZZ_PROFILE", "ATTNCHECK_FUZZ_SHAPES"})
    if (const char* v = std::getenv(name); v && *v)
      std::fprintf(stderr, "fuzz_case_file: %s does not apply here (it reads case files, it draws no problem)\n", name);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  CaseRecord rec;
  try {
    rec = case_from_json(text, "fuzz-input.json");
  } catch (const CaseFileError&) {
    return 0;  // refused with a reason: what a damaged file should get
  } catch (const std::exception& e) {
    fuzz::report_defect(std::string("case_from_json threw something other than CaseFileError: ") + e.what());
  }
  if (const std::string bad = rec.problem.inconsistency(); !bad.empty())
    fuzz::report_defect("case_from_json accepted an inconsistent problem: " + bad);

  const std::string again_text = case_to_json(rec);
  CaseRecord again;
  try {
    again = case_from_json(again_text, "round-trip.json");
  } catch (const std::exception& e) {
    fuzz::report_defect(std::string("case_to_json wrote a file case_from_json refuses: ") + e.what() + "\n" +
                        again_text);
  }
  if (const std::string d = difference(rec.problem, again.problem); !d.empty())
    fuzz::report_defect("problem." + d + " changed in the round trip case_to_json -> case_from_json:\n" + again_text);
  if (again.law != rec.law || again.implementation != rec.implementation || again.message != rec.message)
    fuzz::report_defect("the history changed in the round trip case_to_json -> case_from_json:\n" + again_text);
  return 0;
}
