#include "cli/shard_files.h"

#include "run/shard.h"

namespace attncheck {

bool keep_shard_files(const std::optional<std::string>& flag, std::vector<std::string>& paths, std::ostream& out,
                      std::ostream& err) {
  std::string error;
  const ShardSource s = shard_from_flag_or_env(flag, process_environment(), error);
  if (error.empty()) error = touch_status_file(s);
  if (!error.empty()) {
    err << "attncheck replay: " << error << "\n";
    return false;
  }
  if (!s.spec) return true;
  std::vector<std::string> mine;
  for (std::size_t g = 0; g < paths.size(); ++g)
    if (in_shard(g, *s.spec)) mine.push_back(paths[g]);
  out << "shard " << s.spec->index << "/" << s.spec->count << " (" << s.origin << "): " << mine.size() << " of the "
      << paths.size() << " case file(s)" << (mine.empty() ? "; nothing is replayed here" : "") << "\n";
  paths = std::move(mine);
  return true;
}

}  // namespace attncheck
