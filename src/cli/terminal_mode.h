// How `check` and `replay` talk to a terminal: colour and a progress line only
// where a person watches, plain text wherever a program reads.
//
//   colour:   --color always: on; --color never: off; --color auto (the
//             default): on when stdout is a TTY, NO_COLOR is unset or empty
//             (no-color.org) and CI is not "true".
//   progress: one line on stderr, redrawn in place (progress_line.h), when
//             stderr is a TTY, CI is not "true" and --quiet is not given.
//   quiet:    --quiet: no progress, no per-implementation lines, no table:
//             the seed, the failures, the verdict and the files written.
//
// Example usage:
//   TerminalMode m = terminal_mode(TerminalFacts::of_this_process(), "auto", false, error);
#pragma once

#include <optional>
#include <string>

namespace attncheck {

struct TerminalFacts {
  bool stdout_tty = false, stderr_tty = false;
  bool no_color = false;  // NO_COLOR set and not empty
  bool ci = false;        // CI=true (GitHub Actions, GitLab, most CI systems set it)

  static TerminalFacts of_this_process();
};

struct TerminalMode {
  bool colour = false;
  bool progress = false;
  bool quiet = false;
};

// nullopt with `error` when `color` is not auto, always or never.
std::optional<TerminalMode> terminal_mode(const TerminalFacts& facts, const std::string& color, bool quiet,
                                          std::string& error);

}  // namespace attncheck
