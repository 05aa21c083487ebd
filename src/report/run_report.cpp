#include "report/run_report.h"

#include <algorithm>

namespace attncheck {

bool LawResult::skipped_as_not_applicable() const {
  return skipped() && run.skip_reason == SkipReason::not_applicable;
}

std::string_view LawResult::status_name() const {
  if (expected_fail()) return "expected_fail";
  if (unexpected_pass()) return "unexpected_pass";
  return law_status_name(run.status);
}

bool ImplementationResult::failed() const {
  for (const LawResult& l : laws)
    if (l.counts_as_failure() || (insufficient_fails && l.insufficient())) return true;
  return false;
}

int ImplementationResult::judged() const {
  int n = 0;
  for (const LawResult& l : laws) n += l.run.judged;
  return n;
}

Shape ImplementationResult::largest() const {
  Shape m{0, 0, 0, 0, 0, 0};
  for (const LawResult& l : laws) m = largest_extents(m, l.run.largest);
  return m;
}

std::vector<DType> ImplementationResult::judged_dtypes() const {
  std::vector<DType> out;
  for (DType t : dtypes)  // in the requested order
    for (const LawResult& l : laws)
      if (std::find(l.run.dtypes.begin(), l.run.dtypes.end(), t) != l.run.dtypes.end()) {
        out.push_back(t);
        break;
      }
  return out;
}

const std::vector<AccuracyGrade>& ImplementationResult::accuracy() const {
  // The law that graded the most cases (accuracy_within_typical, drawn for
  // the model, over matches_oracle, whose draws the model fits now and then);
  // the first of equals.
  static const std::vector<AccuracyGrade> none;
  const std::vector<AccuracyGrade>* best = &none;
  int best_cases = 0;
  for (const LawResult& l : laws) {
    int cases = 0;
    for (const AccuracyGrade& g : l.run.accuracy) cases += g.cases;
    if (cases > best_cases) {
      best = &l.run.accuracy;
      best_cases = cases;
    }
  }
  return *best;
}

int ImplementationResult::count(LawStatus s) const {
  int n = 0;
  for (const LawResult& l : laws) n += l.run.status == s;
  return n;
}

bool ImplementationResult::expectation_held() const {
  switch (expectation) {
    case Expectation::none:
      return true;
    case Expectation::must_be_caught:  // by a law that failed, not by too few cases
      return count(LawStatus::fail) > 0;
    case Expectation::must_pass:
      for (const LawResult& l : laws)
        if (l.counts_as_failure() || (insufficient_fails && l.insufficient()) ||
            (l.skipped() && !l.skipped_as_not_applicable() && l.run.skip_reason != SkipReason::by_request))
          return false;
      return true;
  }
  return false;
}

const LawResult* ImplementationResult::most_telling_failure() const {
  const LawResult* best = nullptr;
  auto rank = [](const LawResult& l) {
    return (l.run.diagnosis.empty() ? 0 : 2) + (is_process_law(l.run.law) ? 0 : 1);
  };
  for (const LawResult& l : laws)
    if (l.failed() && (!best || rank(l) > rank(*best))) best = &l;
  return best;
}

bool RunReport::any_failure() const {
  for (const ImplementationResult& i : implementations)
    if (i.failed()) return true;
  return false;
}

bool RunReport::expectations_held() const {
  for (const ImplementationResult& i : implementations)
    if (!i.expectation_held()) return false;
  return true;
}

std::string passed_despite_note(const LawResult& l) {
  const std::string why = l.passed_despite && !l.passed_despite->empty() ? ": " + *l.passed_despite : "";
  return l.run.law + " passed here; it is declared to fail on some machines (\"strict\": false" + why + ")";
}

}  // namespace attncheck
