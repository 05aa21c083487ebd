// What one call of an implementation came to: the status of the call as a
// program (answered, unsupported, crashed, hung, wrote where it must not) and
// the decoded output. Lives with the Problem because encoding and decoding a
// call (call_layout.h) produce it; implementations and laws consume it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attncheck {

enum class CallStatus {
  ok,                  // out is written and decoded
  unsupported,         // ATTNCHECK_UNSUPPORTED: skipped, never a failure
  error,               // any other return code: a failure of the law that asked
  crash,               // the process died (signal); law no_crash
  timeout,             // past the per-call limit; law no_timeout
  out_of_bounds_write, // a guard zone or an input tensor was changed; law no_out_of_bounds_write
  unwritten_output,    // an element of out still holds the poison marker; law writes_every_output
};

std::string_view call_status_name(CallStatus s);

// A process fault is a failure of the implementation as a program, judged by
// its own law rather than by the law whose case provoked it.
inline bool is_process_fault(CallStatus s) {
  return s == CallStatus::crash || s == CallStatus::timeout ||
         s == CallStatus::out_of_bounds_write || s == CallStatus::unwritten_output;
}

struct Outcome {
  CallStatus status = CallStatus::ok;
  std::vector<double> out;  // [batch][heads][q_len][value_dim], decoded to double; when ok
  std::string message;      // the implementation's err text, the signal name, what was overwritten
  // [batch][heads][q_len], natural log, decoded from float; when ok and the
  // problem asked for it (Problem::lse_requested). Padding rows hold NaN.
  std::vector<double> lse = {};
  // A backward problem's gradients, decoded to double, when ok: dq has q's
  // shape [batch][heads][q_len][head_dim], dk k's and dv v's
  // ([batch][kv_heads][kv_len][...]). Padding rows of dq and padding keys of
  // dk and dv are not the callee's to write and decode as NaN.
  std::vector<double> dq = {}, dk = {}, dv = {};
};

}  // namespace attncheck
