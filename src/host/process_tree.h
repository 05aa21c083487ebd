// A process tree read from /proc: ending every process below this one (the
// supervisor, supervisor.h, a child subreaper: a process whose parent dies is
// reparented to it, so killing its own children until none is left ends the
// whole tree), and what a tree costs: the CPU time its processes spent (the
// plugin's time limit, plugin_host.h) and the memory they added (the
// supervisor's memory limit).
#pragma once

#include <cstdint>
#include <sys/types.h>
#include <vector>

namespace attncheck::host {

// CPU time of one process from /proc/<pid>/stat, in milliseconds: its own
// (utime + stime, every thread) and its reaped children's (cutime + cstime).
struct ProcessCpu {
  pid_t pid = -1, parent = -1;
  double own_ms = 0, reaped_ms = 0;
  double total_ms() const { return own_ms + reaped_ms; }
};
// false when the process is gone.
bool read_process_cpu(pid_t pid, ProcessCpu& out);

// The CPU time, in ms, of everything below `root`: each descendant's own and
// reaped children's time, plus the children `root` itself reaped; not
// `root`'s own time. It only grows while the tree runs (a process that ends
// moves its time into its reaper's), except that a process reaped while the
// scan reads the tree may be counted twice in that one reading.
double tree_cpu_ms(pid_t root);

// Every process below `root` (its children, theirs, ...), from one scan of /proc.
std::vector<pid_t> descendants_of(pid_t root);

// Resident bytes of `pid` (/proc/<pid>/statm), 0 when gone.
uint64_t resident_bytes(pid_t pid);
// Bytes only `pid` maps (Private_Clean + Private_Dirty of /proc/<pid>/smaps_rollup;
// the resident size when the kernel has no smaps_rollup), 0 when gone.
uint64_t private_bytes(pid_t pid);

// The pids whose parent is this process (from /proc).
std::vector<pid_t> own_children();

// SIGKILLs and reaps every child, then the children that killing reparents
// here, until none is left (or `give_up_ms` passed). Returns whether none is left.
bool end_every_descendant(int give_up_ms);

}  // namespace attncheck::host
