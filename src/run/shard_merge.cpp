#include "run/shard_merge.h"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include "report/shard_json.h"
#include "run/check_implementation.h"
#include "run/law_result_wire.h"
#include "run/shard.h"

namespace attncheck {
namespace {

std::string shard_name(int index, int count) { return std::to_string(index) + "/" + std::to_string(count); }

// The plan entry as text, for comparing the shards' plans; without the
// reproduce lines, which name the program as each shard was started
// ("build/attncheck", "/ci/build/attncheck": the merge prints the first shard's).
std::string plan_text(const ShardPlanEntry& e) {
  ShardRecord one;
  one.plan.push_back(e);
  one.plan.back().reproduce.clear();
  return shard_to_json(one)["plan"][0].dump();
}

// The first setting two shards disagree on, "" when none.
std::string differing_setting(const ShardFile& a, const ShardFile& b) {
  const ShardRecord &x = *a.report.shard, &y = *b.report.shard;
  if (x.version != y.version) return "attncheck version (" + x.version + " and " + y.version + ")";
  if (a.report.seed != b.report.seed)
    return "seed (" + std::to_string(a.report.seed) + " and " + std::to_string(b.report.seed) + ")";
  if (x.count != y.count) return "shard count (" + std::to_string(x.count) + " and " + std::to_string(y.count) + ")";
  if (x.settings != y.settings) return "settings ('" + x.settings + "' and '" + y.settings + "')";
  if (a.report.default_run != b.report.default_run || a.report.profile != b.report.profile ||
      x.allow_insufficient != y.allow_insufficient)
    return "mode, profile or --allow-insufficient";
  if (x.items != y.items || x.plan.size() != y.plan.size()) return "implementations or laws";
  for (std::size_t k = 0; k < x.plan.size(); ++k)
    if (plan_text(x.plan[k]) != plan_text(y.plan[k]))
      return "implementation " + std::to_string(k) + " (" + x.plan[k].name + " and " + y.plan[k].name +
             ": its source, laws, expectations or what its probes found)";
  return "";
}

Expectations declared_expectations(const ShardPlanEntry& e) {
  Expectations x;
  x.skip_laws = e.skipped;
  for (const ShardDeclared& d : e.declared)
    x.expect_fail.push_back(ExpectedFailure{.implementation = e.name, .law = d.law, .reason = d.reason,
                                            .strict = d.strict, .origin = "the shards' plan"});
  return x;
}

LawResult decoded(const std::string& bytes, const std::string& file, const std::string& what) {
  LawResult l;
  if (!decode_law_result(bytes, l))
    throw std::runtime_error(file + ": " + what + " does not decode (a damaged file, or another build's)");
  return l;
}

// The laws' results of plan entry `k`, as check_law returned them, in its law list's order.
std::vector<LawResult> ran_laws(const std::vector<ShardFile>& files, std::size_t k) {
  const ShardPlanEntry& e = files.front().report.shard->plan[k];
  std::vector<std::optional<LawResult>> at(e.laws.size());
  for (const ShardFile& f : files)
    for (const ShardItem& i : f.report.shard->ran)
      if (i.implementation == k) {
        if (at[i.position]) throw std::runtime_error(f.path + ": " + e.name + "/" + i.law + " was run by two shards");
        at[i.position] = decoded(i.result, f.path, "the result of " + e.name + "/" + i.law);
      }
  std::vector<LawResult> ran;
  for (std::size_t j = 0; j < e.laws.size(); ++j) {
    if (std::count(e.skipped.begin(), e.skipped.end(), e.laws[j])) continue;
    if (!at[j]) throw std::runtime_error("no shard holds the result of " + e.name + "/" + e.laws[j] + " (a damaged file)");
    ran.push_back(std::move(*at[j]));
  }
  return ran;
}

ImplementationResult merged_implementation(const std::vector<ShardFile>& files, std::size_t k) {
  const ShardRecord& first = *files.front().report.shard;
  const ShardPlanEntry& e = first.plan[k];
  const Expectations declared = declared_expectations(e);
  FinishFacts facts{.name = e.name, .source = e.source, .dtypes = e.dtypes, .expectation = e.expectation};
  if (!e.reproduce.empty())
    facts.reproduce = [&e](const std::string& law) {
      const auto it = e.reproduce.find(law);
      return it == e.reproduce.end() ? std::string() : it->second;
    };
  if (!e.probe_fault.empty()) {
    LawResult f = decoded(e.probe_fault, files.front().path, "the probes' fault of " + e.name);
    if (f.run.fault_case) facts.probe_fault = ProcessFault{f.run.fault_status, *f.run.fault_case, f.run.fault_message, f.run.law};
  }
  RunSettings settings;
  settings.options.seed = files.front().report.seed;
  settings.expectations = &declared;
  std::vector<std::string> unused;  // nothing is saved: the shards saved their cases
  ImplementationResult r = finish_results(
      facts, with_skipped_laws(ran_laws(files, k), e.laws, [&](const std::string& l) { return declared.skipped(l); }),
      settings, unused);
  // As one run orders them: finishing's notes, the budget's, the probes'.
  for (const ShardFile& f : files)
    if (!f.report.shard->budget_notes[k].empty()) {
      r.notes.push_back(f.report.shard->budget_notes[k]);
      break;
    }
  for (const std::string& n : e.probe_notes) r.notes.push_back(n);
  r.expectation = e.expectation;
  r.insufficient_fails = !first.allow_insufficient;
  r.accepted_shapes = e.accepted_shapes;
  r.not_checked = e.not_checked;
  for (const ShardFile& f : files)
    for (const ImplementationResult& i : f.report.implementations)
      if (i.name == e.name) r.seconds += i.seconds;
  // The case file the shard that found a failure saved (the same failure: law, message, provenance).
  for (LawResult& l : r.laws)
    for (const ShardFile& f : files)
      for (const ImplementationResult& i : f.report.implementations)
        for (const LawResult& s : i.laws)
          if (l.failed() && l.case_file.empty() && i.name == e.name && s.run.law == l.run.law && s.failed() &&
              s.run.message == l.run.message && s.found_while == l.found_while)
            l.case_file = s.case_file;
  return r;
}

}  // namespace

std::string shards_problem(const std::vector<ShardFile>& files) {
  if (files.empty()) return "no report to merge";
  for (const ShardFile& f : files)
    if (!f.report.shard)
      return f.path + " is not a shard's report (it has no \"shard\" object: only check --shard writes one)";
  for (const ShardFile& f : files)
    if (const std::string d = differing_setting(files.front(), f); !d.empty())
      return files.front().path + " and " + f.path + " are shards of different runs: their " + d + " differ";
  const int count = files.front().report.shard->count;
  std::map<int, std::string> have;
  for (const ShardFile& f : files) {
    const int index = f.report.shard->index;
    if (const auto it = have.find(index); it != have.end())
      return "shard " + shard_name(index, count) + " is given twice: " + it->second + " and " + f.path;
    have[index] = f.path;
  }
  std::string missing;
  for (int i = 0; i < count; ++i)
    if (!have.count(i)) missing += (missing.empty() ? "" : ", ") + shard_name(i, count);
  if (!missing.empty())
    return "missing shard(s) " + missing + ": a merge needs every shard of the run (0/" + std::to_string(count) +
           " to " + shard_name(count - 1, count) + ")";
  return "";
}

RunReport merge_shards(const std::vector<ShardFile>& files) {
  const RunReport& first = files.front().report;
  RunReport r;
  r.seed = first.seed;
  r.profile = first.profile;
  r.default_run = first.default_run;
  for (const ShardFile& f : files)
    if (!f.report.timestamp.empty() && (r.timestamp.empty() || f.report.timestamp < r.timestamp))
      r.timestamp = f.report.timestamp;
  // The shards ran side by side: the run took as long as its longest shard.
  for (const ShardFile& f : files) r.wall_seconds = std::max(r.wall_seconds, f.report.wall_seconds);
  for (std::size_t k = 0; k < first.shard->plan.size(); ++k) r.implementations.push_back(merged_implementation(files, k));
  return r;
}

}  // namespace attncheck
