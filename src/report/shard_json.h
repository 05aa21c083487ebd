// The JSON report's "shard" object (an extension: docs/cli.md, "Sharding"):
// what a shard of a run records for `attncheck merge` (shard_record.h).
//   "shard": {"index": 0, "count": 3, "version": "0.1.0", "settings": "--impl reference ... --seed 7",
//             "allow_insufficient": false, "items": 81,
//             "plan": [{"name", "source", "expectation", "laws": [..], "skipped": [..],
//                       "reproduce": {law: command}, "declared": [{"law", "reason", "strict"}],
//                       "dtypes": [..], "accepted_shapes", "probe_notes": [..], "probe_fault": HEX}],
//             "ran": [{"implementation": 0, "position": 3, "law", "result": HEX}],
//             "budget_notes": ["", ...]}
// HEX: the bytes of an encoded LawResult (run/law_result_wire.h), two
// lowercase hex digits a byte: exact, native and tied to the version that
// wrote it (a merge refuses shards of other versions).
// Read back by report/json_report_reader.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "report/shard_record.h"

namespace attncheck {

nlohmann::ordered_json shard_to_json(const ShardRecord& shard);

// Bytes as hex, and back; nullopt when `hex` is not an even run of hex digits.
std::string to_hex(const std::string& bytes);
std::optional<std::string> from_hex(const std::string& hex);

}  // namespace attncheck
