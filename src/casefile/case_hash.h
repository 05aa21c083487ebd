// The identity of a case: its law and its problem, not its history. Two saves
// of the same failing call (from two runs, two drivers, two processes) get the
// same name and are stored once.
//
// Example usage:
//   case_file_name(rec) == "matches_oracle-3f2a9c0d1b7e4a55.json"
#pragma once

#include <cstdint>
#include <string>

#include "casefile/case_file.h"

namespace attncheck {

// 64-bit FNV-1a over the law name and the problem's bytes: dtype, shape,
// causal rule, scale, every element of q, k, v (IEEE bits; a NaN counts by its
// sign only, as the file keeps it) and the mask (as 0/1); for a problem that
// needs schema 2, every v2 field after them (v1 hashes are unchanged). The
// fields and their order are the Problem's field list's (`since` and `hash`,
// problem/problem_fields.h); tests/casefile/golden pins the values.
uint64_t case_content_hash(const CaseRecord& rec);

// "<law>-<16 hex digits of the content hash>.json"; characters of the law
// outside [A-Za-z0-9_] become '_', so the name never leaves its folder.
std::string case_file_name(const CaseRecord& rec);

}  // namespace attncheck
