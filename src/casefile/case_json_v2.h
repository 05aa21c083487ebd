// The fields of case-file schema 2: what a Problem of ABI v2 holds beyond v1
// (casefile/case_file.h gives the format). A problem that uses none of them
// is written as schema 1, byte for byte as before schema 2 existed, so saved
// cases, their names and their hashes do not change.
//
// Example usage (inside case_to_json / case_from_json):
//   if (needs_schema_2(p)) write_schema2_fields(os, p);
//   p.shape.kv_heads = read_kv_heads(r, problem_json, p.shape);
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>

#include "casefile/case_reader.h"
#include "problem/problem.h"

namespace attncheck {

// p uses a field schema 1 cannot hold: a v2 feature, or a broadcast mask.
bool needs_schema_2(const Problem& p);

// "    \"kv_heads\": 2,\n": written after "heads".
void write_kv_heads(std::ostringstream& os, const Problem& p);
// Every other schema-2 field, one "    \"key\": value" line each, each line
// but the last followed by ",\n" (the caller ends the last).
void write_schema2_fields(std::ostringstream& os, const Problem& p);

// problem.kv_heads: absent means heads; else it must divide heads.
int64_t read_kv_heads(const CaseReader& r, const nlohmann::json& problem, const Shape& s);
// problem.mask_broadcast (absent: full), needed before the mask is sized.
Broadcast read_broadcast(const CaseReader& r, const nlohmann::json& problem, const char* key);
// Every other schema-2 field, each optional (absent or null: its neutral
// value), each validated before it is allocated. p's shape, dtype and tensors
// are read already.
void read_schema2_fields(const CaseReader& r, const nlohmann::json& problem, Problem& p);
// A schema-1 file holding a schema-2 field is refused, naming the field.
void refuse_schema2_fields(const CaseReader& r, const nlohmann::json& problem);

}  // namespace attncheck
