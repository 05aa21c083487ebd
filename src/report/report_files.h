// Where the report files go, made safe against interrupts and aliasing:
//
// - A report is written whole or not at all: the text goes to a temporary
//   file in the report's own folder and is renamed over the path when
//   complete (write_text_file, run_report.h), so a reader never sees half a
//   report.
// - An earlier run's report never passes for this run's: at the start of a
//   run every requested report path is cleared (remove_stale_reports), so a
//   run that is interrupted leaves no report at all, never last week's
//   "verdict: pass".
// - Two report flags never name one file (report_paths_clash): not by the
//   same name, not through a symlink (even one that dangles) and not through
//   a hard link.
//
// A path that names a device or a FIFO (--json /dev/stdout) is written
// straight through, and never removed.
//
// Example usage:
//   if (std::string bad = report_paths_clash(paths); !bad.empty()) fail(bad);       // exit 2
//   if (std::string bad = remove_stale_reports(paths); !bad.empty()) fail(bad);       // before the run
//   ... run ...
//   write_text_file(paths["json"], text);                                              // temp + rename
#pragma once

#include <string>

#include "report/report_formats.h"

namespace attncheck {

// The file a report path finally names: symlinks followed (also a dangling
// one, to where it would create the file), the folder made absolute and
// canonical. Used to write through a symlink and to compare two paths.
std::string report_target(const std::string& path);

// "" when the requested report paths are fine, else why not (for exit 2):
// "-" (reports go to files), or two flags naming one file, directly, through
// a symlink or through a hard link ("--json and --junit name the same file
// (r.xml): one would overwrite the other").
std::string report_paths_clash(const ReportPaths& paths);

// Removes the regular file at each requested report path (through a symlink:
// the file it names). A file that cannot be removed (its folder is read-only)
// is emptied instead. "" when done, else which file and why.
std::string remove_stale_reports(const ReportPaths& paths);

}  // namespace attncheck
