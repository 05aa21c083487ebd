// How long a plugin may take, and why two limits.
//
// A call's limit (--timeout-ms, default 2000 ms) and a load's
// (--load-timeout-ms, default 60 s) are CPU time: what the plugin's processes
// (the host and everything it started) spent, read from /proc. CPU time is
// what the plugin did, whatever else the machine runs: on a CI runner whose
// load is ten times its cores a call gets a tenth of a core, and takes ten
// times as long by the clock, for the same CPU time. So a busy machine does not
// turn a correct plugin's verdict into a timeout.
//
// A plugin that blocks (a lock, a pipe, sleep(), pause()) spends no CPU at
// all, so a second limit, wall-clock time, catches it: --wall-timeout-ms and
// --load-wall-timeout-ms. Their defaults are generous enough for any load a
// shared runner sees: 30 times the CPU limit for a call, and never under a
// minute (a call that needs its whole CPU limit still answers when it gets a
// thirtieth of a core), 3 times for a load, and never under 3 minutes
// (loading also waits on the disk). A plugin that blocks forever costs one such wait per
// law at most (the laws stop calling after a hang: RunOptions::max_timeouts).
#pragma once

#include <algorithm>

namespace attncheck {

inline constexpr int kDefaultTimeoutMs = 2000;       // CPU time of one call
inline constexpr int kDefaultLoadTimeoutMs = 60000;  // CPU time of loading (and of each restart)
// Wall-clock time all the restarts of one plugin instance may take together
// (PluginOptions::restart_budget_ms): two minutes, time for a hundred restarts
// of a plugin that loads in a second, and for two of one that loads in a minute.
inline constexpr int kDefaultRestartBudgetMs = 120000;

// The wall-clock limits when none is given (0): derived from the CPU limits.
inline int default_wall_timeout_ms(int cpu_ms) {
  return static_cast<int>(std::clamp<long long>(30LL * cpu_ms, 60000, 1LL << 30));
}
inline int default_load_wall_timeout_ms(int load_cpu_ms) {
  return static_cast<int>(std::clamp<long long>(3LL * load_cpu_ms, 180000, 1LL << 30));
}

}  // namespace attncheck
