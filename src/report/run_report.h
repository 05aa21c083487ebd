// What one `attncheck check` found, per implementation and per law. The
// console table, the JSON file and the JUnit file are three renderings of
// this one model (console_report.h, json_report.h, junit_report.h), so they
// can never disagree about a verdict.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "driver/law_run.h"
#include "problem/dtype.h"
#include "report/shard_record.h"

namespace attncheck {

// One law judged on one implementation.
struct LawResult {
  LawReport run;          // status, cases, message, shrunk counterexample, diagnosis, shrink steps
  std::string case_file;  // where --save-failures wrote the shrunk case; else empty
  std::string reproduce;  // the one command line that reproduces this failure; else empty
  // Process laws only: the law whose generated case provoked the crash, hang
  // or bad write (its --law and the seed reproduce it). Empty otherwise.
  std::string found_while;
  double seconds = 0;  // wall time of run_law (generation, checks, shrinking)
  // Declared a known, accepted failure (--expect-fail, --config, a case file's
  // "expect": "fail"): the reason, possibly empty. Unset: the law must pass.
  std::optional<std::string> expected_failure;
  // Declared with "strict": false (a failure some machines show) and passed
  // here: that declaration's reason. A plain pass; the reports add a note.
  std::optional<std::string> passed_despite;
  // replay: the case file this result replayed (the law alone does not name it).
  std::string replayed_file;
  // replay: what could not be run at all (a damaged case file, a plugin that
  // would not load): an error of the run, not a law's failure. Its status is
  // fail (the verdict must not be green); JUnit writes it as an <error>.
  bool refused = false;

  // The law broke (whatever was expected): the case is saved, diagnosed, reproduced.
  bool failed() const { return run.status == LawStatus::fail; }
  bool expected_fail() const { return failed() && expected_failure.has_value(); }
  // An expected failure that did not happen: reported, and it fails the run.
  bool unexpected_pass() const { return run.status == LawStatus::pass && expected_failure.has_value(); }
  // What turns the verdict red: a failure nobody expected, or an expectation that broke.
  bool counts_as_failure() const { return (failed() && !expected_failure) || unexpected_pass(); }
  // The status the reports print: law_status_name(run.status), or, for a
  // declared expectation, "expected_fail" (it failed) / "unexpected_pass" (it passed).
  std::string_view status_name() const;
  bool skipped() const { return run.status == LawStatus::skipped; }
  bool insufficient() const { return run.status == LawStatus::insufficient; }
  // Skipped because the law said nothing about any generated case (as
  // opposed to every call being unsupported, or every call faulting).
  bool skipped_as_not_applicable() const;
};

// "LAW passed here; it is declared to fail on some machines (...)": the note
// for a law with passed_despite set.
std::string passed_despite_note(const LawResult& l);

// What the embedded default run demands of a built-in.
enum class Expectation {
  none,            // --impl / --plugin: no expectation, the verdict is the answer
  must_pass,       // a reference: every law passes (skipped only where the law does not apply)
  must_be_caught,  // a zoo member: at least one law fails
};

struct ImplementationResult {
  std::string name;
  std::string source;              // "builtin:<name>" | "plugin:<path>"
  std::vector<DType> dtypes;       // the dtypes the laws drew from, after the probe
  std::vector<std::string> notes;  // e.g. "f16 dropped: the probe call answered ATTNCHECK_UNSUPPORTED (...)"
  std::vector<LawResult> laws;     // in all_laws() order
  Expectation expectation = Expectation::none;
  // Wall time from its first law's start to its last law's end, diagnosis
  // included (under --jobs its laws overlap: less than their seconds' sum).
  double seconds = 0;
  // An insufficient law fails the implementation (--allow-insufficient: it does not).
  bool insufficient_fails = true;
  // What the probe learned about the shapes it accepts ("head_dim in {128}; q_len 1 only"); empty: anything.
  std::string accepted_shapes;
  // What it declares that this version of attncheck does not check yet
  // (Implementation::declared_not_judged: a version-3 plugin's "feature paged",
  // "promise deterministic", ...): no law judged any of it, whatever the
  // verdict, and every report says so. Empty: everything declared was judged.
  std::vector<std::string> not_checked;

  bool failed() const;  // a law failed, or one was insufficient (unless allowed): the JSON verdict "fail"
  int count(LawStatus s) const;
  int judged() const;  // cases judged over all laws
  // The largest extents judged over all laws, and the dtypes judged.
  Shape largest() const;
  std::vector<DType> judged_dtypes() const;
  bool expectation_held() const;  // always true for Expectation::none
  // The failure that best explains the fault to a reader: one with a
  // diagnosis first, then a semantic law before a process law; nullptr if none.
  const LawResult* most_telling_failure() const;
  // The accuracy grade beside the verdict (docs/tolerance.md, "The typical
  // error"): the grades of the law that graded the most cases
  // (accuracy_within_typical, else matches_oracle), one per dtype; empty when no law did.
  const std::vector<AccuracyGrade>& accuracy() const;
};

struct RunReport {
  uint64_t seed = 0;
  std::string profile = "small";  // the shape profile the cases were drawn from (--profile)
  bool default_run = false;  // the embedded default: expectations, not verdicts, decide the exit status
  bool replay = false;       // `attncheck replay`: one LawResult per case file replayed
  std::string timestamp;     // when the run started, ISO 8601 UTC ("2026-01-31T12:00:00"); JUnit's timestamp
  std::vector<ImplementationResult> implementations;
  // The run's wall time in seconds (check: from its start to its results;
  // merge: the longest shard's); negative: not known (a report read back without it).
  double wall_seconds = -1;
  // Not empty when the run was interrupted (Ctrl-C): "interrupted after 12 of
  // 40 work items"; the laws not finished are insufficient, "not run: ...".
  std::string interrupted;
  // `check --shard`: this report is one shard's part, and what a merge needs (shard_record.h).
  std::optional<ShardRecord> shard;

  bool any_failure() const;
  bool expectations_held() const;
};

// Writes `text` to `path` (replacing it) whole or not at all: to a temporary
// file in the same folder, renamed over `path` when complete; through a
// symlink to the file it names; a device or a FIFO is written in place
// (report_files.h). Throws std::runtime_error naming the file and the cause
// when it cannot.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace attncheck
