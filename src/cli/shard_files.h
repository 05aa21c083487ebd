// `replay --shard INDEX/COUNT` (and the environment's shard, run/shard.h):
// the case files a replay names, split as check splits its work items: the
// files in the order replay takes them (each once, in the order first named;
// a folder's in name order), file g to shard g % COUNT. Each case replays
// alone, so a file's verdict does not depend on its shard; each shard's
// reports are its files' (CI systems read several JUnit files as one run).
//
// Example usage:
//   if (!keep_shard_files(args.shard, paths, out, err)) return 2;  // paths: this shard's now
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace attncheck {

// Keeps this shard's files of `paths` (all of them when the run is not
// sharded) and says which shard it is; false when the flag or the
// environment is bad (said on `err` after "attncheck replay: ": exit 2).
bool keep_shard_files(const std::optional<std::string>& flag, std::vector<std::string>& paths, std::ostream& out,
                      std::ostream& err);

}  // namespace attncheck
