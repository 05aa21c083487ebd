#include "cli/terminal_mode.h"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace attncheck {

TerminalFacts TerminalFacts::of_this_process() {
  TerminalFacts f;
  f.stdout_tty = ::isatty(STDOUT_FILENO) == 1;
  f.stderr_tty = ::isatty(STDERR_FILENO) == 1;
  const char* no_color = std::getenv("NO_COLOR");
  f.no_color = no_color && *no_color;
  const char* ci = std::getenv("CI");
  f.ci = ci && (std::string_view(ci) == "true" || std::string_view(ci) == "1");
  return f;
}

std::optional<TerminalMode> terminal_mode(const TerminalFacts& facts, const std::string& color, bool quiet,
                                          std::string& error) {
  TerminalMode m;
  if (color == "always") m.colour = true;
  else if (color == "never") m.colour = false;
  else if (color == "auto") m.colour = facts.stdout_tty && !facts.no_color && !facts.ci;
  else {
    error = "--color " + color + ": choose auto, always or never";
    return std::nullopt;
  }
  m.quiet = quiet;
  m.progress = facts.stderr_tty && !facts.ci && !quiet;
  return m;
}

}  // namespace attncheck
