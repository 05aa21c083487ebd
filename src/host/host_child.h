// The plugin's side of the isolation: the loop a forked child runs. It is the
// only process that ever dlopens the plugin, so the plugin's constructors,
// forward calls and crashes stay out of the parent.
#pragma once

namespace attncheck::host {

// Runs in the child right after fork: loads `path`, sends a HelloMessage on
// `sock`, then serves CallRequests against the shared region `region_fd`
// until the socket closes. Never returns (ends with _exit), so the parent's
// stack (a test runner, the CLI) is never unwound twice.
[[noreturn]] void run_host_child(const char* path, int sock, int region_fd);

}  // namespace attncheck::host
