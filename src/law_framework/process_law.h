// The process laws (no_crash, no_timeout, no_out_of_bounds_write,
// writes_every_output) judge the implementation as a program rather than its
// arithmetic: each runs one call and fails when the call ends in its own
// process fault. They share this one factory, and their verdicts on the faults
// other laws' cases (or the probes) provoked are decided here too.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "law_framework/law.h"

namespace attncheck {

// A law that runs the implementation once on the problem (forward, or forward
// then backward for a backward problem) and fails when the outcome is `fault`
// (message: the outcome's). Another process fault is not this law's to judge
// (a fault: discarded, counted by the runner); an unsupported call is
// unsupported; a call that returned an error code before the part the law
// judges (no_out_of_bounds_write, writes_every_output) is incomplete. Only the
// calls that completed that part are judged.
//
// Example usage:
//   Law law_no_crash() { return make_process_law("no_crash", "the call never kills the process", CallStatus::crash); }
Law make_process_law(std::string name, std::string statement, CallStatus fault);

// A crash, hang or bad write seen outside the process law that judges it:
// under another law's case, or in the probes before any law ran.
struct ProcessFault {
  CallStatus status = CallStatus::ok;
  Problem call;              // the call that ended so
  std::string message;       // "crash: killed by SIGSEGV"
  std::string found_while;   // the law whose case provoked it, or the probes
};

// A process law's failure on a fault seen elsewhere.
struct ProcessLawCharge {
  const Law* law;             // the process law that judges the fault's status
  const ProcessFault* fault;  // the fault that fails it: its call, message and found_while become the law's
};

// The process laws' verdicts on the faults seen elsewhere (`seen`, in the
// order they were seen): a fault fails the process law that judges its
// status, whichever law's case provoked it, so a fault is never silent --
// also when that law was not run (--law left it out: the caller adds it, in
// the order of the charges). The first such fault decides; a law that failed
// on its own case keeps that failure (`failed_on_its_own`), which was shrunk
// and says more. A status no process law judges fails nothing.
//
// Example usage:
//   for (const ProcessLawCharge& c : charge_process_faults(faults, [&](const Law& l) { return failed(l.name); }))
//     fail(c.law->name, c.fault->message, c.fault->call, c.fault->found_while);
std::vector<ProcessLawCharge> charge_process_faults(const std::vector<ProcessFault>& seen,
                                                    const std::function<bool(const Law&)>& failed_on_its_own);

// How many of a law's `judged` cases were calls that completed. A process law
// that failed on its own case counted the faulting call as judged (the fault
// is its failure), but that call did not complete; a fault charged to it from
// elsewhere is not in its count.
int completed_judged_calls(std::string_view law, int judged, bool failed_on_its_own_case);

}  // namespace attncheck
