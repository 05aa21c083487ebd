// The worker processes of `check --jobs N`: work items spread over N forked
// processes, each answering one item at a time, the next item going to the
// first worker that is free.
//
// Why processes, not threads: RapidCheck keeps the state of the property being
// checked (its ImplicitParam bindings: the current generator, size, random
// source) in process-global statics, not per thread, for the whole of a
// property's run, so two run_law calls can never overlap in one process. And
// the plugin host forks without exec (host/host_child.cpp), which is safe only
// from a single-threaded process. Each worker is a single-threaded process
// forked from the parent while it is single-threaded too (no thread is running
// then: parallel_for joins its threads before it returns), so both hold in
// every worker exactly as they do in a run without --jobs.
//
// A worker runs with ScopedComputeThreads(1): N workers do not each start more
// threads for the oracle. It never writes to the console, ends with _exit (no
// atexit handler or static destructor of the parent's runs twice) and is
// killed when the parent dies (PR_SET_PDEATHSIG); a plugin's host processes it
// started end with it (their supervisor's lifeline closes).
//
// Example usage:
//   run_in_worker_processes(items.size(), 2,
//       [&](std::size_t i) { return encode(work(items[i])); },  // in a worker
//       [&] { instances.clear(); },                             // a worker's last act
//       [&](std::size_t i, std::string bytes) { results[i] = decode(bytes); });  // in the parent
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace attncheck {

// Runs work(i) for every i in [0, items) on `workers` (>= 1) forked processes
// and calls done(i, its bytes) in the parent as each answer arrives (in the
// order they finish). The state `work` reads is the parent's at the call (each
// worker has its copy); what it changes stays in that worker. Before forking
// it flushes stdio, so buffered output is not written twice. Throws
// std::runtime_error when a worker cannot be started or ends before answering
// (it crashed: a bug of attncheck's, never of a plugin's, which runs in its own
// process); every worker is ended and reaped before it returns or throws.
void run_in_worker_processes(std::size_t items, int workers, const std::function<std::string(std::size_t)>& work,
                             const std::function<void()>& worker_exit,
                             const std::function<void(std::size_t, std::string)>& done);

}  // namespace attncheck
