// attncheck_bench: every benchmark family registers itself from its own file
// (forward_bench.cpp, oracle_bench.cpp, torch_bench.cpp, plugin_overhead_bench.cpp,
// check_bench.cpp, gemm_peak_bench.cpp, law_check_bench.cpp); docs/speed.md has the
// filters that keep a run short, bench/run-table.sh the table.
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
