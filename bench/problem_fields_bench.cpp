// problem_fields/<what>: the per-case serialisations of a Problem that sit on
// a check's hot path, each on the same drawn problems (every feature, a
// backward problem among them; lengths up to 72, dims up to 72):
//   oracle_memo_key:   the oracle memo's key (oracle/oracle_memo.h), once per oracle call;
//   law_result_wire:   a LawResult with a counterexample, encoded and decoded (check --jobs);
//   call_wire:         an ABI v2 call and its gradient views to the host's wire and back;
//   case_hash:         the case hash that names a saved case file;
//   gen_options_key:   the sample memo's key of a law's options (once per law and target).
// Issue #31 derived each from one field list: these are its before/after figures.
#include <benchmark/benchmark.h>

#include <vector>

#include "casefile/case_hash.h"
#include "run/law_result_wire.h"
#include "oracle/oracle_memo.h"
#include "host/call_wire.h"
#include "call/call_layout.h"
#include "gen/generators.h"
#include "gen/sample_memo.h"

namespace attncheck::bench {
namespace {

GenOptions every_feature() {
  GenOptions g;
  g.dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  g.features = kEveryFeature;
  return g;
}

const std::vector<Problem>& problems() {
  static const std::vector<Problem> ps = [] {
    std::vector<Problem> v;
    for (uint64_t seed = 1; seed <= 64; ++seed) v.push_back(sample_problem(every_feature(), seed, 100));
    return v;
  }();
  return ps;
}

void oracle_memo_key(benchmark::State& state) {
  std::size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(oracle_detail::memo_key(problems()[i++ % problems().size()]));
}
BENCHMARK(oracle_memo_key)->Name("problem_fields/oracle_memo_key");

void law_result_wire(benchmark::State& state) {
  std::vector<LawResult> rs;
  for (const Problem& p : problems()) {
    LawResult l;
    l.run.law = "matches_oracle";
    l.run.counterexample = p;
    rs.push_back(std::move(l));
  }
  std::size_t i = 0;
  for (auto _ : state) {
    const std::string bytes = encode_law_result(rs[i++ % rs.size()]);
    LawResult back;
    benchmark::DoNotOptimize(decode_law_result(bytes, back));
  }
}
BENCHMARK(law_result_wire)->Name("problem_fields/law_result_wire");

void call_wire(benchmark::State& state) {
  const Problem& p = problems()[0];
  const CallLayout layout = layout_for(p, 2);
  std::vector<uint8_t> region(layout.total + 64);
  uint8_t* base = region.data();
  const attncheck_call_v2 call = abi_call_v2(p, layout, base);
  const attncheck_grad grad{};
  for (auto _ : state) {
    const host::WireCallV2 w = host::to_wire(call, base);
    const host::WireGrad g = host::to_wire(grad, base);
    benchmark::DoNotOptimize(host::from_wire(w, base));
    benchmark::DoNotOptimize(host::from_wire(g, base));
  }
}
BENCHMARK(call_wire)->Name("problem_fields/call_wire");

void case_hash(benchmark::State& state) {
  std::size_t i = 0;
  CaseRecord rec;
  rec.law = "matches_oracle";
  for (auto _ : state) {
    rec.problem = problems()[i++ % problems().size()];
    benchmark::DoNotOptimize(case_content_hash(rec));
  }
}
BENCHMARK(case_hash)->Name("problem_fields/case_hash");

void gen_options_key_bench(benchmark::State& state) {
  GenOptions g = every_feature();
  g.domains.resize(3);
  g.head_dims = {32, 64, 128};
  for (auto _ : state) benchmark::DoNotOptimize(gen_options_key(g));
}
BENCHMARK(gen_options_key_bench)->Name("problem_fields/gen_options_key");

}  // namespace
}  // namespace attncheck::bench
