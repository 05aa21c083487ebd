// The command line's shape flags (--profile, --head-dim, --q-len, --kv-len,
// --batch, --heads) turned into GenOptions, validated once for every command
// that draws cases, written back into printed command lines, and read back
// from such text (the fuzz targets' ATTNCHECK_FUZZ_SHAPES, fuzz/README.md).
//
// Example usage:
//   ShapeFlags f;  f.profile = "decode";  f.kv_len = "1024..4096";
//   std::string error;
//   std::optional<GenOptions> g = shape_options(f, error);  // nullopt: error says why
//   read_shape_flags_text("--head-dim 128 --kv-len=1..64", f, error);  // false: error says why
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gen/gen_options.h"

namespace attncheck {

struct ShapeFlags {
  std::string profile = "default";  // --profile NAME (gen/profiles.h)
  std::string head_dims;            // --head-dim 64,128
  std::string q_len, kv_len;        // --q-len A..B or N
  std::string batch, heads;         // --batch N or A..B, --heads likewise
};

// The profile's options narrowed by the flags; nullopt with `error` naming the
// flag and what is wrong.
std::optional<GenOptions> shape_options(const ShapeFlags& flags, std::string& error);

// " --profile decode --kv-len 1024..4096" for the flags that differ from the
// defaults (empty when none), for printed command lines.
std::string shape_flags_text(const ShapeFlags& flags);

// The reverse of shape_flags_text: words "--flag VALUE" or "--flag=VALUE" of
// the six flags above, separated by spaces, set in `flags` (the fields not
// named keep their values). False with `error` naming the word that is not
// one of them, or the flag given without a value; the values themselves are
// checked by shape_options, as the command line's are.
bool read_shape_flags_text(std::string_view text, ShapeFlags& flags, std::string& error);

}  // namespace attncheck
