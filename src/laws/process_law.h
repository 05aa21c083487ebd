// The process laws (no_crash, no_timeout, no_out_of_bounds_write,
// writes_every_output) judge the implementation as a program rather than its
// arithmetic: each runs one call and fails when the call ends in its own
// process fault. They share this one factory.
#pragma once

#include <string>

#include "laws/law.h"

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

}  // namespace attncheck
