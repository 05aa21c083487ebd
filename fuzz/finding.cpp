#include "finding.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "casefile/case_file.h"
#include "law_framework/law_calls.h"

namespace attncheck::fuzz {

namespace {

std::string regression_dir() {
  const char* d = std::getenv("ATTNCHECK_REGRESSION_DIR");
  return d && *d ? d : "regressions";
}

}  // namespace

void report_finding(const Problem& p, const std::string& law, const Implementation& impl,
                    const std::string& message, std::vector<LawCall> calls) {
  complete_calls(p, calls);
  const LawCall* saved = call_to_save(p, calls);
  CaseRecord rec = failure_record(saved ? saved->problem : p, law, impl.name(), impl.source(), "libfuzzer",
                                  /*seed=*/0, message);
  if (saved) rec.derivation = saved_call_history(p, calls, *saved);
  std::fprintf(stderr, "\n== attncheck finding: law %s fails for %s (%s)\n%s\n%s\n", law.c_str(),
               rec.implementation.c_str(), rec.source.c_str(), message.c_str(), p.describe().c_str());
  for (std::size_t k = 0; k < calls.size(); ++k)
    std::fprintf(stderr, "%s (%s): %s\n%s\n", k == 0 ? "failing call" : "compared with", calls[k].role.c_str(),
                 calls[k].derivation.c_str(), calls[k].problem == p ? "" : calls[k].problem.describe().c_str());
  try {
    const std::string path = save_case(rec, regression_dir());
    std::fprintf(stderr, "== case file: %s\n== reproduce: attncheck replay %s\n", path.c_str(), path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "== could not save the case file: %s\n%s\n", e.what(), case_to_json(rec).c_str());
  }
  std::fflush(stderr);
  std::abort();
}

void report_defect(const std::string& what) {
  std::fprintf(stderr, "\n== attncheck finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace attncheck::fuzz
