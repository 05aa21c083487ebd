#include "host/signal_names.h"

#include <csignal>
#include <cstring>
#include <sys/wait.h>

namespace attncheck {

namespace {

// sigabbrev_np() would do this but only exists since glibc 2.32; the faults a
// plugin can die of are few, so a table keeps the code portable.
const char* signal_abbrev(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGHUP: return "SIGHUP";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return nullptr;
  }
}

}  // namespace

std::string signal_description(int sig) {
  const char* abbrev = signal_abbrev(sig);
  std::string s = abbrev ? abbrev : "signal " + std::to_string(sig);
  if (const char* text = strsignal(sig)) s += std::string(" (") + text + ")";
  return s;
}

std::string wait_status_description(int status) {
  if (WIFSIGNALED(status)) return "killed by " + signal_description(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "stopped (wait status " + std::to_string(status) + ")";
}

}  // namespace attncheck
