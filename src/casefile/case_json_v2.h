// The fields of case-file schema 2: what a Problem of ABI v2 holds beyond v1
// (casefile/case_file.h gives the format). A problem that uses none of them
// is written as schema 1, byte for byte as before schema 2 existed, so saved
// cases, their names and their hashes do not change.
//
// The writer of every field is case_json_problem.h (from the field list).
//
// Example usage (inside case_from_json):
//   if (rec.schema_version == 1) refuse_schema2_fields(r, problem_json);
//   p.shape.kv_heads = read_kv_heads(r, problem_json, p.shape);
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>

#include "casefile/case_reader.h"
#include "problem/problem.h"

namespace attncheck {

// p uses a field schema 1 cannot hold: a v2 feature, or a broadcast mask.
bool needs_schema_2(const Problem& p);

// problem.kv_heads: absent means heads; else it must divide heads.
int64_t read_kv_heads(const CaseReader& r, const nlohmann::json& problem, const Shape& s);
// problem.mask_broadcast (absent: full), needed before the mask is sized.
Broadcast read_broadcast(const CaseReader& r, const nlohmann::json& problem, const char* key);
// Every field of "problem" (the list's, problem/problem_fields.h): those of
// schema 1 required but the mask, the later ones optional (absent or null:
// the neutral value), each validated before it is allocated, each refusal
// naming the field. Every field that is not a list is read before the lists,
// whose lengths it gives.
void read_problem_json(const CaseReader& r, const nlohmann::json& problem, int schema_version, Problem& p);
// A schema-1 file holding a schema-2 field is refused, naming the field.
void refuse_schema2_fields(const CaseReader& r, const nlohmann::json& problem);

}  // namespace attncheck
