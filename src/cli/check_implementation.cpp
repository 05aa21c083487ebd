#include "cli/check_implementation.h"

#include <chrono>
#include <ctime>

#include "casefile/case_file.h"
#include "diagnosis/diagnose.h"

namespace attncheck {
namespace {

// run_law keeps the fault's message as "<status name>: <text>" (laws/law.cpp,
// unusable()); the status itself when the runner recorded it.
CallStatus fault_status_of(const LawReport& r) {
  if (r.fault_status != CallStatus::ok) return r.fault_status;
  for (CallStatus s :
       {CallStatus::crash, CallStatus::timeout, CallStatus::out_of_bounds_write, CallStatus::unwritten_output})
    if (r.fault_message.rfind(std::string(call_status_name(s)) + ":", 0) == 0) return s;
  return CallStatus::ok;
}

// A crash, hang or bad write provoked by another law's case fails the
// process law that judges it, unless that law already failed on its own.
// A process law left out by --law is added: a fault is never silent.
void charge_process_faults(ImplementationResult& r) {
  const std::size_t judged = r.laws.size();
  for (std::size_t k = 0; k < judged; ++k) {
    if (!r.laws[k].run.fault_case) continue;
    const std::string process_law = process_law_for(fault_status_of(r.laws[k].run));
    if (process_law.empty()) continue;
    // Copied: r.laws may grow below.
    const std::string found_while = r.laws[k].run.law, message = r.laws[k].run.fault_message;
    const Problem fault_case = *r.laws[k].run.fault_case;
    LawResult* target = nullptr;
    for (LawResult& l : r.laws)
      if (l.run.law == process_law) target = &l;
    if (!target) {
      r.laws.push_back(LawResult{});
      target = &r.laws.back();
      target->run.law = process_law;
      target->run.cases = 0;
    } else if (target->failed()) {
      continue;
    }
    target->run.status = LawStatus::fail;
    target->run.message = message;
    target->run.counterexample = fault_case;
    target->run.shrink_steps = 0;
    target->found_while = found_while;
  }
}


}  // namespace

uint64_t law_seed(uint64_t run_seed, std::string_view law) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the name
  for (char c : law) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  uint64_t z = run_seed ^ h;  // then one splitmix64 round
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::string process_law_for(CallStatus s) {
  switch (s) {
    case CallStatus::crash:
      return "no_crash";
    case CallStatus::timeout:
      return "no_timeout";
    case CallStatus::out_of_bounds_write:
      return "no_out_of_bounds_write";
    case CallStatus::unwritten_output:
      return "writes_every_output";
    default:
      return "";
  }
}

ImplementationResult check_implementation(Implementation& impl, const std::vector<const Law*>& laws,
                                          const LawRunSettings& settings, std::vector<std::string>& errors) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  ImplementationResult r;
  r.name = impl.name();
  r.source = impl.source();
  r.dtypes = settings.options.gen.dtypes;
  for (const Law* law : laws) {
    RunOptions o = settings.options;
    o.seed = law_seed(settings.options.seed, law->name);
    LawResult l;
    if (const std::string why = settings.skip_reason ? settings.skip_reason() : ""; !why.empty()) {
      l.run.law = law->name;
      l.run.status = LawStatus::skipped;
      l.run.cases = 0;
      l.run.message = why;
      r.laws.push_back(std::move(l));
      continue;
    }
    const auto law_start = Clock::now();
    l.run = run_law(*law, impl, o);
    l.seconds = std::chrono::duration<double>(Clock::now() - law_start).count();
    r.laws.push_back(std::move(l));
  }
  charge_process_faults(r);

  for (LawResult& l : r.laws) {
    if (!l.failed()) continue;
    const std::string& repro_law = l.found_while.empty() ? l.run.law : l.found_while;
    if (settings.reproduce) l.reproduce = settings.reproduce(repro_law);
    if (!l.run.counterexample) continue;
    // The fault models explain numbers; a crash or a hang has none to explain.
    if (l.run.diagnosis.empty() && !is_process_law(l.run.law)) l.run.diagnosis = diagnose(impl, *l.run.counterexample);
    if (settings.save_failures_dir.empty()) continue;
    CaseRecord c;
    c.problem = *l.run.counterexample;
    c.law = l.run.law;
    c.implementation = r.name;
    c.source = r.source;
    c.found_by = settings.found_by;
    c.message = l.run.message;
    c.diagnosis = l.run.diagnosis;
    // c.date left empty: save_case stamps the current UTC time.
    c.seed = settings.options.seed;
    try {
      l.case_file = save_case(c, settings.save_failures_dir);
    } catch (const std::exception& e) {
      errors.push_back(std::string("cannot save the failing case of ") + l.run.law + " for " + r.name + ": " +
                       e.what());
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

}  // namespace attncheck
