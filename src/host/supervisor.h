// The process between attncheck and a plugin's host child. It never loads the
// plugin, so the plugin cannot change what it does. It is a child subreaper
// (PR_SET_CHILD_SUBREAPER): whatever the plugin starts, and whatever those
// processes start, even after setsid(), is reparented to it when its own
// parent dies, never to init. When the host ends (a crash, an exit, a kill),
// when it passes the memory limit, or when attncheck closes the lifeline or
// dies, the supervisor kills and reaps every process below it, then reports
// (host_protocol.h, SupervisorReport) and exits. So no process a plugin
// starts outlives its host, nor the checker, however the checker ends.
//
//   attncheck --(call socket)------------------------> host child (the plugin)
//       \---(lifeline)--> supervisor --(fork, reaps)--/   \--> anything it starts
#pragma once

#include <cstdint>

namespace attncheck::host {

struct SupervisorSettings {
  const char* dlopen_path = nullptr;
  int call_sock = -1;   // the host's end of the call socket
  int lifeline = -1;    // the supervisor's end of the lifeline
  int region_fd = -1;   // the shared region, for the host
  uint64_t memory_limit_bytes = 0;  // resident memory of the host; 0: none
};

// Runs in the process forked by ChildProcess::start. Never returns.
[[noreturn]] void run_supervisor(const SupervisorSettings& s);

}  // namespace attncheck::host
