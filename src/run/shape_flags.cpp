#include "run/shape_flags.h"

#include <charconv>
#include <sstream>
#include <string_view>
#include <vector>

#include "gen/profiles.h"

namespace attncheck {
namespace {

// The flags and the fields they set, in the order shape_flags_text writes them.
struct FlagField {
  std::string_view flag;
  std::string ShapeFlags::*field;
};
constexpr FlagField kFlagFields[] = {
    {"--profile", &ShapeFlags::profile}, {"--head-dim", &ShapeFlags::head_dims}, {"--q-len", &ShapeFlags::q_len},
    {"--kv-len", &ShapeFlags::kv_len},   {"--batch", &ShapeFlags::batch},         {"--heads", &ShapeFlags::heads}};

// Extents above this are refused: one tensor of them would not fit in memory.
constexpr int64_t kMaxExtent = 1 << 20;

bool parse_int(std::string_view text, int64_t& v) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size();
}

// "N" or "A..B" with 1 <= A <= B <= kMaxExtent.
bool parse_range(const std::string& text, const char* flag, int64_t& lo, int64_t& hi, std::string& error) {
  const std::size_t dots = text.find("..");
  const bool ok = dots == std::string::npos
                      ? parse_int(text, lo) && (hi = lo, true)
                      : parse_int(std::string_view(text).substr(0, dots), lo) &&
                            parse_int(std::string_view(text).substr(dots + 2), hi);
  if (!ok || lo < 1 || hi < lo || hi > kMaxExtent) {
    error = std::string(flag) + " '" + text + "': expected N or A..B with 1 <= A <= B <= " +
            std::to_string(kMaxExtent);
    return false;
  }
  return true;
}

}  // namespace

std::optional<GenOptions> shape_options(const ShapeFlags& f, std::string& error) {
  const Profile* profile = find_profile(f.profile);
  if (!profile) {
    error = "--profile '" + f.profile + "': choose " + profile_names();
    return std::nullopt;
  }
  GenOptions g = profile->options();
  if (!f.head_dims.empty()) {
    std::stringstream in(f.head_dims);
    g.head_dims.clear();
    for (std::string word; std::getline(in, word, ',');) {
      int64_t d = 0;
      if (!parse_int(word, d) || d < 1 || d > 4096) {
        error = "--head-dim '" + f.head_dims + "': expected a comma list of sizes from 1 to 4096";
        return std::nullopt;
      }
      g.head_dims.push_back(d);
      g.max_head_dim = std::max(g.max_head_dim, d);
    }
  }
  struct Range { const std::string& text; const char* flag; int64_t& lo; int64_t& hi; };
  for (Range r : {Range{f.q_len, "--q-len", g.min_q_len, g.max_q_len},
                  Range{f.kv_len, "--kv-len", g.min_kv_len, g.max_kv_len},
                  Range{f.batch, "--batch", g.min_batch, g.max_batch},
                  Range{f.heads, "--heads", g.min_heads, g.max_heads}})
    if (!r.text.empty() && !parse_range(r.text, r.flag, r.lo, r.hi, error)) return std::nullopt;
  return g;
}

std::string shape_flags_text(const ShapeFlags& f) {
  const ShapeFlags defaults;
  std::string s;
  for (const FlagField& ff : kFlagFields)
    if (f.*ff.field != defaults.*ff.field) s += " " + std::string(ff.flag) + " " + f.*ff.field;
  return s;
}

bool read_shape_flags_text(std::string_view text, ShapeFlags& flags, std::string& error) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    const std::size_t eq = word.find('=');
    const std::string_view name = std::string_view(word).substr(0, eq);
    const FlagField* ff = nullptr;
    for (const FlagField& candidate : kFlagFields)
      if (candidate.flag == name) ff = &candidate;
    if (!ff) {
      error = "'" + word + "' is not a shape flag: use --profile, --head-dim, --q-len, --kv-len, --batch, --heads";
      return false;
    }
    const bool next_is_value = i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0;
    const std::string value = eq != std::string::npos ? word.substr(eq + 1) : next_is_value ? words[++i] : "";
    if (value.empty()) {  // an empty value would leave the flag unset: refused, never ignored
      error = std::string(ff->flag) + " needs a value";
      return false;
    }
    flags.*ff->field = value;
  }
  return true;
}

}  // namespace attncheck
