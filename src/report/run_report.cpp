#include "report/run_report.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace attncheck {

bool LawResult::skipped_as_not_applicable() const {
  return skipped() && run.skip_reason == SkipReason::not_applicable;
}

bool ImplementationResult::failed() const {
  for (const LawResult& l : laws)
    if (l.failed()) return true;
  return false;
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
    case Expectation::must_be_caught:
      return failed();
    case Expectation::must_pass:
      for (const LawResult& l : laws)
        if (l.failed() || (l.skipped() && !l.skipped_as_not_applicable())) return false;
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

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  f << text;
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path + ": write failed");
}

}  // namespace attncheck
