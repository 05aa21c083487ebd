// The JSON report's "failure_groups" of an implementation (an added field;
// docs/reports.md): its groups of two or more failing laws that likely share
// one cause (failure_groups.h), each
//   {"laws": ["matches_oracle", "weights_sum_to_one", ...],      most direct first
//    "directness": ["oracle", "exact_value", ...],               each law's kind, same order
//    "same_diagnosis": true, "same_case": false,
//    "diagnosis": "behaves like: ..."}                            when same_diagnosis
// An empty array when there is none (the writer then leaves the field out).
#pragma once

#include <nlohmann/json.hpp>

#include "report/run_report.h"

namespace attncheck {

nlohmann::ordered_json failure_groups_to_json(const ImplementationResult& impl);

}  // namespace attncheck
