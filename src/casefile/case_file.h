// A regression case file: one failing call, with the law it broke and how it
// was found, stored as JSON so that it is read by people and replayed forever.
// The format for users, field by field: docs/case-files.md (casefile_doc_fields
// keeps it complete).
//
// The file holds the whole Problem exactly: every tensor element is a C99
// hex-float string ("0x1.8p+1", "-0x0p+0", "nan", "-nan", "inf", "-inf"), so a
// case round-trips bit for bit in its dtype (NaN keeps its sign, not its
// payload). Format (schema_version 1):
//   {
//     "schema_version": 1,
//     "law": "matches_oracle",
//     "expect": "fail",                      // optional (absent: "pass"): what replaying the case on
//                                            // the recorded implementation must give. "fail" for a case
//                                            // of a bug-zoo member or of a declared expected failure
//                                            // (check --expect-fail): replay as recorded honours it
//     "problem": {
//       "dtype": "f32",                      // f32 | f64 | f16 | bf16
//       "batch": 1, "heads": 1, "q_len": 2, "kv_len": 2, "head_dim": 2, "value_dim": 1,
//       "causal": "none",                    // none | top_left | bottom_right
//       "scale": "default",                  // a number, or "default" (1/sqrt(head_dim))
//       "q": [ "0x1p+0", "-0x1.8p+1",        // [batch][heads][q_len][head_dim], one row a line
//              "0x0p+0", "0x1p-2" ],
//       "k": [ ... ],                        // [batch][heads][kv_len][head_dim]
//       "v": [ ... ],                        // [batch][heads][kv_len][value_dim]
//       "mask": "1011"                       // [batch][heads][q_len][kv_len] as '0'/'1', or null
//     },
//     "history": {"implementation": "seed_unscaled", "source": "builtin:seed_unscaled",
//                 "seed": 42, "found_by": "rapidcheck", "message": "...", "diagnosis": "...",
//                 "derivation": "...",           // optional: the problem is a call the law built
//                 "date": "2025-01-31T12:00:00Z"}
//   }
// Hand-written cases may also give tensor elements as JSON numbers or decimal
// strings; every element must be exactly representable in the dtype.
//
// Schema 2 (casefile/case_json_v2.h) holds a problem of ABI v2; it is written
// only for a problem that uses a v2 feature or a broadcast mask (every other
// problem is written as schema 1, unchanged). It adds to "problem", all
// written, all optional when read (absent or null: the neutral value):
//       "kv_heads": 2,                       // after "heads"; divides heads (k, v: [batch][kv_heads][kv_len][..])
//       "mask_broadcast": {"per_batch": true, "per_head": false, "per_row": true},
//                                            // the axes the mask varies along; it holds one entry per
//                                            // kept (batch, head, row) and key
//       "bias": [ "0x1p-1", "-inf", ... ],   // [batch][heads][q_len][kv_len] as bias_broadcast stores it,
//                                            // in the dtype or -inf (NaN only where padding reads it); or null
//       "bias_broadcast": {...},             // as mask_broadcast
//       "q_lens": [3, 0], "kv_lens": null,   // [batch], 0..q_len / 0..kv_len
//       "window_left": -1, "window_right": 4,  // -1: unbounded
//       "softcap": 30,                       // 0: none
//       "alibi_slopes": ["0x1p-4", ...],     // [heads], float values; or null
//       "sinks": ["-0x1.4p+3", ...],         // [heads], float values; or null
//       "lse_requested": true,
//       "layouts": {"q": {"order": ["batch", "row", "head"], "gap": {"batch": 0, "head": 0, "row": 3}},
//                   "k": {...}, "v": {...}, "out": {...}}   // axes outermost first; unused elements
//                                            // after each step of an axis
// A backward problem (Problem::dout non-empty) also has, written only for one
// (a forward problem's file is what it was before gradients), optional when read:
//       "layouts": {..., "dout": {...}, "dq": {...}, "dk": {...}, "dv": {...}},
//                                            // the gradient views (dense when absent; refused without dout)
//       "dout": [ "0x1p-1", "nan", ... ]      // [batch][heads][q_len][value_dim] (out's shape), in the
//                                            // dtype; padding rows may hold anything (NaN included).
//                                            // Absent or null: a forward problem.
//
// Example usage:
//   CaseRecord rec{.problem = failing, .law = "matches_oracle", .implementation = impl.name(),
//                  .source = impl.source(), .found_by = "rapidcheck", .message = verdict.message};
//   const std::string path = save_case(rec, "build/regressions");   // build/regressions/matches_oracle-<hash>.json
//   const CaseRecord again = load_case(path);                       // again.problem == failing, bit for bit
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "text/printable_text.h"
#include "problem/problem.h"

namespace attncheck {

struct CaseRecord {
  // The schema the file was read with (1 or 2). Writing ignores it: a case is
  // written in the lowest schema that holds its problem.
  int schema_version = 1;
  Problem problem;
  std::string law, implementation, source /* "builtin:x" | "plugin:/p" */,
      found_by /* rapidcheck|libfuzzer|manual */, message, diagnosis, date /* ISO 8601 UTC */;
  // "pass" | "fail": the verdict the recorded implementation must give when
  // the case is replayed against it (a zoo member's case must keep failing).
  std::string expect = "pass";
  uint64_t seed = 0;
  // history.derivation, written only when set: the problem is a call the law
  // built from the case it drew (masked_keys_ignored's hidden keys, V =
  // identity), and how ("the call that failed (before): the case with ...;
  // the shrunk case was ..."). Empty: the problem is the drawn case itself.
  std::string derivation;
};

// what() names the file and the problem, e.g.
//   "regression/cases/x.json: problem.q holds 3 elements but the shape needs 4".
// The file's name and its fields are anybody's text: what() holds them as
// printable() shows them (no control or bidi character reaches a terminal).
struct CaseFileError : std::runtime_error {
  explicit CaseFileError(const std::string& what) : std::runtime_error(printable(what)) {}
};

// The record of one failing case, as every driver (CLI, property tests,
// fuzzers) saves it. The date is left empty: save_case stamps it.
CaseRecord failure_record(const Problem& p, std::string law, std::string implementation, std::string source,
                          std::string found_by, uint64_t seed, std::string message, std::string diagnosis = "");

std::string case_to_json(const CaseRecord&);
// Parses and validates (schema, shape caps before any allocation, tensor
// lengths, dtype representability, mask); throws CaseFileError.
CaseRecord case_from_json(const std::string& text, const std::string& name_for_errors);
// Reads at most kMaxCaseFileBytes (casefile/case_limits.h); throws CaseFileError.
CaseRecord load_case(const std::string& path);
// Writes <dir>/<law>-<content hash>.json atomically (temp + rename); identical case already there: returns its path;
// never overwrites a different file. Creates dir. Returns the path. Throws CaseFileError on I/O failure.
// The content hash covers the law and the problem, not the history: the same
// failing call found twice is stored once (the first history is kept). A
// different file under that name (a hash collision, or a damaged file) makes
// the new case take a suffixed name, <law>-<hash>-2.json. An empty `date` is
// stamped with the current UTC time. Safe for several processes saving into
// one folder at once.
std::string save_case(const CaseRecord&, const std::string& dir);

}  // namespace attncheck
