// Names a signal for a crash report: "SIGSEGV (Segmentation fault)".
#pragma once

#include <string>

namespace attncheck {

// The symbolic name and strsignal() text of `sig`; "signal N" for one without a name.
std::string signal_description(int sig);

// How a child process ended, from a waitpid() status:
// "killed by SIGSEGV (Segmentation fault)" or "exited with status 3".
std::string wait_status_description(int status);

}  // namespace attncheck
