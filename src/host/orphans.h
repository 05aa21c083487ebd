// Processes a plugin leaves behind by killing its own supervisor.
//
// The supervisor (supervisor.h) ends everything a plugin starts, but it runs
// as the same user as the plugin, so a plugin can kill it: a daemon the
// plugin started would then be reparented to init and outlive the run. A
// process that adopts orphans (PR_SET_CHILD_SUBREAPER) receives them instead,
// and ends them whenever one of its plugin hosts ends.
//
// Which children are orphans: those neither forked here as a supervisor nor
// in this process's own process group. The program's own children (the
// workers of `check --jobs`) stay in its group; the plugin's processes start
// in the host's group (or a session of their own). A plugin that moves a
// process into attncheck's own group escapes this: isolation is a child
// process, not a sandbox (docs/isolation.md).
//
// Only the CLI adopts (its main, and each worker it forks): a program that
// links the library keeps its process semantics unless it calls adopt_orphans().
#pragma once

#include <sys/types.h>

namespace attncheck {

// Makes this process a child subreaper, now and in every process forked
// from it that starts a plugin host (the flag is not inherited through fork).
void adopt_orphans();

// The supervisors this process forked: never taken for orphans.
void note_supervisor(pid_t pid);
void forget_supervisor(pid_t pid);

// When this process adopts orphans: SIGKILLs and reaps each child that is an
// orphan (see above), until none is left. Otherwise does nothing.
void end_adopted_orphans();

}  // namespace attncheck
