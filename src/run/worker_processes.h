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
//
// Progress and interruption (a progress line, Ctrl-C): a worker may tell the
// parent how far its item has come (report_worker_progress, sent at most five
// times a second: a message of 24 bytes), and the parent, while it waits,
// wakes at least every kTickMilliseconds to call `tick` and ask `stop`; a
// stop ends every worker (SIGKILL; their plugin hosts follow) and returns.
// Workers ignore SIGINT and SIGTERM: a Ctrl-C reaches the terminal's whole
// process group, and it is the parent that decides what happens then.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace attncheck {

inline constexpr int kTickMilliseconds = 250;

// What the parent learns, and is asked, while the workers run; all optional.
struct WorkerEvents {
  std::function<void(std::size_t item, int worker)> handed;     // item given to worker (0 to workers - 1)
  std::function<void(std::size_t item, int worker, uint64_t count)> progress;  // report_worker_progress's count
  std::function<void()> tick;   // at least every kTickMilliseconds while waiting
  std::function<bool()> stop;   // asked at every wake: true ends the workers and the run
};

// In a worker, during work(i): tells the parent `count` (e.g. the cases its
// item has judged so far); sent only when 200 ms have passed since the last.
// Does nothing outside a worker.
void report_worker_progress(uint64_t count);

// Runs work(i) for every i in [0, items) on `workers` (>= 1) forked processes
// and calls done(i, its bytes) in the parent as each answer arrives (in the
// order they finish). The state `work` reads is the parent's at the call (each
// worker has its copy); what it changes stays in that worker. Before forking
// it flushes stdio, so buffered output is not written twice. Throws
// std::runtime_error when a worker cannot be started or ends before answering
// (it crashed: a bug of attncheck's, never of a plugin's, which runs in its own
// process); every worker is ended and reaped before it returns or throws.
// Returns false when events.stop ended it before every item was done.
bool run_in_worker_processes(std::size_t items, int workers, const std::function<std::string(std::size_t)>& work,
                             const std::function<void()>& worker_exit,
                             const std::function<void(std::size_t, std::string)>& done,
                             const WorkerEvents& events = {});

}  // namespace attncheck
