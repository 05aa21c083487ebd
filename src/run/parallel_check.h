// `check --jobs N`: every (implementation, law) pair of the run is one work
// item, in one pool for the whole run (the embedded default has a dozen
// implementations of 27 laws: a pool of all pairs keeps the workers busy to
// the end better than the laws of one implementation would), spread over N
// worker processes (worker_processes.h says why processes). The results come
// back exact and are put back in their original order, and each law runs from
// its own seed (law_seed), so the same seed gives the same report whatever N,
// timings apart.
//
// What an item runs on: a built-in gets a new instance for each law (free, and
// a built-in's state between calls, see BuiltinInfo::reset, then starts the
// same for a law whatever ran before it on that worker); a plugin gets one
// instance per worker, loaded when the worker first needs it
// (load_plugin_again): a process of its own, since one instance serves one
// caller. An implementation that keeps state between calls (the fault the law
// `deterministic` catches) can still answer a law differently with another N,
// and a plugin that loads only once cannot serve a second worker (its laws are
// then insufficient with the reason; --jobs 1 checks it in one process).
//
// With one worker (N = 1, or a single item) everything runs here in order, on
// the instance the probes used, with the compute threads left as they are.
//
// Example usage:
//   std::vector<Target> targets = ...;  // name, source, loaded, open (target.h), probed
//   run_checks(targets, laws, settings, 2, budget,
//              [&](std::size_t k) { out << "checking " << targets[k].name << " ..."; },
//              [&](std::size_t k, std::vector<LawResult> laws, double seconds) { ... });
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "run/check_implementation.h"
#include "run/run_budget.h"

namespace attncheck {

// What a progress line (cli/progress_line.h) learns while the run goes, and
// whether the run is to stop (Ctrl-C); all optional. A slot is a worker
// (0 to workers - 1; 0 without workers): what it runs now.
struct CheckProgress {
  // Once, before any item: how many workers (1: every item runs here, in this thread).
  std::function<void(int workers)> begins;
  // Before item (target, law) runs on `slot`.
  std::function<void(int slot, std::size_t target, const Law& law)> started;
  // The cases the item on `slot` has judged so far (at most five times a second under workers).
  std::function<void(int slot, long long judged)> advanced;
  // As each item's answer arrives (in the order they finish).
  std::function<void(int slot, std::size_t target, const LawResult& result)> finished;
  // With workers: at least every kTickMilliseconds (worker_processes.h) while the run waits on them.
  std::function<void()> tick;
  // Asked after each item (and at each tick with workers): true stops the run
  // there; every item not finished by then is reported insufficient with
  // kNotRunInterrupted, never as a pass.
  std::function<bool()> interrupted;
};

inline constexpr const char* kNotRunInterrupted = "not run: the run was interrupted";

// The most workers --jobs may ask for: far above any core count, low enough
// that a typo cannot start thousands of processes.
inline constexpr int kMaxJobs = 256;

// The default of --jobs: the core count, at least 1.
int default_jobs();

// How many (target, law) items run_checks runs: every law on every target,
// and each target's extra_laws.
std::size_t work_item_count(const std::vector<Target>& targets, const std::vector<const Law*>& laws);

// Runs every law on every target with `settings` (whose stop_reason may ask
// `budget`), on min(jobs, items) workers, every call through `budget`. For each target in order, once it and all before it are
// done: started(k), then done(k, its laws' results in `laws` order and then
// its extra_laws' (target.h), the seconds they took, diagnosis included). With one worker and a target that
// is alone in its group of items (parallel_check.cpp: a run of one target, or
// the last of a run with one more than a multiple of 32), started(k) comes
// before its first law instead, so a slow check shows what it is on.
// `errors` receives a line for each item that could not run (no instance
// could be opened); its law is then reported insufficient with that reason.
// A target's seconds are the wall time from its first item's start to its
// last item's end (under --jobs its laws overlap: their sum would exceed it).
// Returns how many items finished before progress.interrupted said stop (all of them when it did not).
// Throws std::runtime_error when a worker process dies (worker_processes.h).
std::size_t run_checks(std::vector<Target>& targets, const std::vector<const Law*>& laws, const RunSettings& settings,
                int jobs, RunBudget& budget,
                const std::function<void(std::size_t)>& started,
                const std::function<void(std::size_t, std::vector<LawResult>, double)>& done,
                std::vector<std::string>& errors, const CheckProgress& progress = {});

}  // namespace attncheck
