// Ending every process below this one. Used by the supervisor (supervisor.h),
// a child subreaper: a process whose parent dies is reparented to it, so
// killing its own children until none is left ends the whole tree.
#pragma once

#include <sys/types.h>
#include <vector>

namespace attncheck::host {

// The pids whose parent is this process (from /proc).
std::vector<pid_t> own_children();

// SIGKILLs and reaps every child, then the children that killing reparents
// here, until none is left (or `give_up_ms` passed). Returns whether none is left.
bool end_every_descendant(int give_up_ms);

}  // namespace attncheck::host
