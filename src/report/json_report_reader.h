// Reading a JSON report (json_report.h) back into the run's result model
// (run_report.h): what `attncheck merge` reads of each shard's report.
// Strict: every field the writer writes is read with its type and its
// values' vocabulary (statuses, dtypes, features, expectations, modes, as
// the writer names them: law_status_name, dtype_name, feature_name,
// expectation_name), a field the writer never writes is refused, and the
// derived fields (an implementation's "verdict" and "judged") must agree with
// its laws. A problem throws ReportReadError naming the file, the field and
// what is wrong ("shard-1.json: implementations[0].laws[3].status: \"passed\"
// is not one of pass, fail, ...").
//
// What a report's JSON does not hold stays empty: a counterexample's tensors
// (the JSON has its text), a law's largest shape and dtypes, why a law was
// skipped. A shard's report holds its laws' results exactly in its "shard"
// object (shard_json.h), read into RunReport::shard.
//
// Example usage:
//   try {
//     const RunReport r = read_json_report("shard-0.json");
//   } catch (const ReportReadError& e) { err << e.what(); }
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "report/run_report.h"

namespace attncheck {

struct ReportReadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `name` is the file's name in messages.
RunReport report_from_json(const nlohmann::json& j, const std::string& name);

// The file read and parsed (a file that is not JSON is named with the parser's words).
RunReport read_json_report(const std::string& path);

}  // namespace attncheck
