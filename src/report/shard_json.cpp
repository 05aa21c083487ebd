#include "report/shard_json.h"

#include "report/json_report.h"

namespace attncheck {

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  return hex;
}

std::optional<std::string> from_hex(const std::string& hex) {
  if (hex.size() % 2) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string bytes;
  bytes.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    bytes += static_cast<char>(hi * 16 + lo);
  }
  return bytes;
}

nlohmann::ordered_json shard_to_json(const ShardRecord& s) {
  nlohmann::ordered_json j;
  j["index"] = s.index;
  j["count"] = s.count;
  j["version"] = s.version;
  j["settings"] = s.settings;
  j["allow_insufficient"] = s.allow_insufficient;
  j["items"] = s.items;
  nlohmann::ordered_json plan = nlohmann::ordered_json::array();
  for (const ShardPlanEntry& e : s.plan) {
    nlohmann::ordered_json p;
    p["name"] = e.name;
    p["source"] = e.source;
    p["expectation"] = std::string(expectation_name(e.expectation));
    p["laws"] = e.laws;
    p["skipped"] = e.skipped;
    p["reproduce"] = nlohmann::ordered_json::object();
    for (const auto& [law, command] : e.reproduce) p["reproduce"][law] = command;
    nlohmann::ordered_json declared = nlohmann::ordered_json::array();
    for (const ShardDeclared& d : e.declared) declared.push_back({{"law", d.law}, {"reason", d.reason}, {"strict", d.strict}});
    p["declared"] = declared;
    nlohmann::ordered_json dtypes = nlohmann::ordered_json::array();
    for (DType t : e.dtypes) dtypes.push_back(std::string(dtype_name(t)));
    p["dtypes"] = dtypes;
    p["accepted_shapes"] = e.accepted_shapes;
    p["probe_notes"] = e.probe_notes;
    p["not_checked"] = e.not_checked;
    p["probe_fault"] = to_hex(e.probe_fault);
    plan.push_back(p);
  }
  j["plan"] = plan;
  nlohmann::ordered_json ran = nlohmann::ordered_json::array();
  for (const ShardItem& i : s.ran)
    ran.push_back({{"implementation", i.implementation},
                   {"position", i.position},
                   {"law", i.law},
                   {"result", to_hex(i.result)}});
  j["ran"] = ran;
  j["budget_notes"] = s.budget_notes;
  return j;
}

}  // namespace attncheck
