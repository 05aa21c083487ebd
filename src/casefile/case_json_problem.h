// A Problem's fields as a case file's "problem" object (format:
// casefile/case_file.h), written from the problem's field list
// (problem/problem_fields.h): a new field of the list is written without a
// line here, in the list's order, in the files of the schema its `since` names.
//
// Example usage (case_to_json):
//   os << "  \"problem\": {\n";
//   write_problem_json(os, p);  // "    \"dtype\": \"f32\",\n ... \"mask\": null"
//   os << "\n  },\n";
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "problem/problem.h"

namespace attncheck {

// One "    \"key\": value" line per field the file's schema holds (schema 2
// when needs_schema_2(p); the gradient fields only for a backward problem),
// separated by ",\n", the last not ended.
void write_problem_json(std::ostringstream& os, const Problem& p);

// The keys of "problem" that only a schema-2 file may hold, in the list's order.
std::vector<std::string> schema2_keys();

}  // namespace attncheck
