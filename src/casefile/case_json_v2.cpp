// Schema 2 of case files: the ABI v2 fields of a Problem (case_json_v2.h).
// Written in full (every field, neutral ones too, so a file documents itself);
// read with every field optional (a hand-written case gives what it uses), and
// checked as case_json.cpp checks the rest: sizes before allocation, values
// in range, each refusal naming the field.
#include "casefile/case_json_v2.h"

#include <algorithm>
#include <array>
#include <limits>

namespace attncheck {

namespace {

using nlohmann::json;

constexpr const char* kAxisNames[3] = {"batch", "head", "row"};

// The schema-2 keys of "problem", for refusing them in a schema-1 file.
constexpr const char* kSchema2Keys[] = {"kv_heads", "mask_broadcast", "bias", "bias_broadcast", "q_lens",
                                        "kv_lens", "window_left", "window_right", "softcap", "alibi_slopes",
                                        "sinks", "lse_requested", "layouts", "dout"};

void write_floats(std::ostringstream& os, const std::vector<double>& t, int64_t cols) {
  os << "[";
  const bool rows = cols > 0 && !t.empty() && t.size() % static_cast<std::size_t>(cols) == 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i == 0 || (rows && i % static_cast<std::size_t>(cols) == 0)) os << (i ? ",\n      " : "\n      ");
    else os << ", ";
    os << '"' << exact_float_text(t[i]) << '"';
  }
  os << (t.empty() ? "]" : "\n    ]");
}

void write_broadcast(std::ostringstream& os, const Broadcast& b) {
  auto flag = [](bool x) { return x ? "true" : "false"; };
  os << "{\"per_batch\": " << flag(b.per_batch) << ", \"per_head\": " << flag(b.per_head)
     << ", \"per_row\": " << flag(b.per_row) << "}";
}

void write_lens(std::ostringstream& os, const std::vector<int32_t>& lens) {
  if (lens.empty()) { os << "null"; return; }
  os << "[";
  for (std::size_t b = 0; b < lens.size(); ++b) os << (b ? ", " : "") << lens[b];
  os << "]";
}

void write_layout(std::ostringstream& os, const TensorLayout& l) {
  os << "{\"order\": [";
  for (int k = 0; k < 3; ++k) os << (k ? ", " : "") << '"' << kAxisNames[l.order[k]] << '"';
  os << "], \"gap\": {";
  for (int a = 0; a < 3; ++a) os << (a ? ", " : "") << '"' << kAxisNames[a] << "\": " << l.gap[a];
  os << "}}";
}

// A per-head vector of float values (ALiBi slopes, sinks).
std::vector<double> read_per_head(const CaseReader& r, const json& pj, const char* key, int64_t heads) {
  const json* j = r.optional(pj, key);
  if (!j) return {};
  const std::string field = std::string("problem.") + key;
  std::vector<double> v = r.floats(*j, field, heads, DType::f32);
  for (std::size_t h = 0; h < v.size(); ++h)
    if (!std::isfinite(v[h])) r.fail(field + "[" + std::to_string(h) + "] must be finite");
  return v;
}

std::vector<int32_t> read_lens(const CaseReader& r, const json& pj, const char* key, int64_t batch, int64_t full) {
  const json* j = r.optional(pj, key);
  if (!j) return {};
  const std::string field = std::string("problem.") + key;
  if (!j->is_array()) r.fail(field + " must be an array of integers or null");
  if (static_cast<int64_t>(j->size()) != batch)
    r.fail(field + " holds " + std::to_string(j->size()) + " lengths but batch is " + std::to_string(batch));
  std::vector<int32_t> lens;
  for (std::size_t b = 0; b < j->size(); ++b)
    lens.push_back(static_cast<int32_t>(r.integer((*j)[b], field + "[" + std::to_string(b) + "]", 0, full)));
  return lens;
}

int64_t read_window(const CaseReader& r, const json& pj, const char* key) {
  const json* j = r.optional(pj, key);
  return j ? r.integer(*j, std::string("problem.") + key, -1, std::numeric_limits<int64_t>::max()) : -1;
}

// One view's layout; its span (first to one past the last element, gaps
// included) is refused past kMaxCaseElements before anything is sized by it.
TensorLayout read_layout(const CaseReader& r, const json& j, const std::string& field,
                         const std::array<int64_t, 4>& extents) {
  if (!j.is_object()) r.fail(field + " must be an object {\"order\": [...], \"gap\": {...}}");
  TensorLayout l;
  if (const json* order = r.optional(j, "order")) {
    if (!order->is_array() || order->size() != 3)
      r.fail(field + ".order must list the three axes \"batch\", \"head\", \"row\", outermost first");
    std::array<bool, 3> seen{};
    for (int k = 0; k < 3; ++k) {
      const json& name = (*order)[k];
      const auto at = std::find_if(std::begin(kAxisNames), std::end(kAxisNames),
                                   [&](const char* n) { return name.is_string() && name.get_ref<const std::string&>() == n; });
      if (at == std::end(kAxisNames)) r.fail(field + ".order[" + std::to_string(k) + "] = " + shown(name) + " is not \"batch\", \"head\" or \"row\"");
      const auto axis = static_cast<uint8_t>(at - std::begin(kAxisNames));
      if (seen[axis]) r.fail(field + ".order names " + kAxisNames[axis] + " twice");
      seen[axis] = true;
      l.order[k] = axis;
    }
  }
  if (const json* gap = r.optional(j, "gap")) {
    if (!gap->is_object()) r.fail(field + ".gap must be an object {\"batch\": n, \"head\": n, \"row\": n}");
    for (int a = 0; a < 3; ++a)
      if (const json* g = r.optional(*gap, kAxisNames[a]))
        l.gap[a] = r.integer(*g, field + ".gap." + kAxisNames[a], 0, kMaxCaseElements);
  }
  // The strides as TensorLayout::strides makes them, each step checked.
  int64_t inner = extents[3];
  for (int pos = 2; pos >= 0; --pos) {
    const int axis = l.order[pos];
    const int64_t stride = inner + l.gap[axis];
    if (stride > kMaxCaseElements / extents[axis])
      r.fail(field + " spans more than the limit of " + std::to_string(kMaxCaseElements) + " elements");
    inner = stride * extents[axis];
  }
  return l;
}

}  // namespace

bool needs_schema_2(const Problem& p) {
  return (p.features() & ~kV1Features) != 0 || (p.has_mask() && !p.mask_broadcast.full());
}

void write_kv_heads(std::ostringstream& os, const Problem& p) {
  os << "    \"kv_heads\": " << p.shape.kv_head_count() << ",\n";
}

void write_schema2_fields(std::ostringstream& os, const Problem& p) {
  const Shape& s = p.shape;
  os << "    \"mask_broadcast\": ";
  write_broadcast(os, p.mask_broadcast);
  os << ",\n    \"bias\": ";
  if (p.has_bias()) write_floats(os, p.bias, s.kv_len);
  else os << "null";
  os << ",\n    \"bias_broadcast\": ";
  write_broadcast(os, p.bias_broadcast);
  os << ",\n    \"q_lens\": ";
  write_lens(os, p.q_lens);
  os << ",\n    \"kv_lens\": ";
  write_lens(os, p.kv_lens);
  os << ",\n    \"window_left\": " << p.window_left << ",\n    \"window_right\": " << p.window_right
     << ",\n    \"softcap\": " << json(p.softcap).dump();
  for (auto [key, values] : {std::pair{"alibi_slopes", &p.alibi_slopes}, std::pair{"sinks", &p.sinks}}) {
    os << ",\n    \"" << key << "\": ";
    if (values->empty()) os << "null";
    else write_floats(os, *values, 0);
  }
  os << ",\n    \"lse_requested\": " << (p.lse_requested ? "true" : "false") << ",\n    \"layouts\": {";
  const std::pair<const char*, const TensorLayout*> views[] = {
      {"q", &p.layouts.q},       {"k", &p.layouts.k},   {"v", &p.layouts.v},   {"out", &p.layouts.out},
      {"dout", &p.layouts.dout}, {"dq", &p.layouts.dq}, {"dk", &p.layouts.dk}, {"dv", &p.layouts.dv}};
  // The gradient views only in a backward problem's file: a forward problem's
  // file is what it was before gradients existed.
  const std::size_t count = p.is_backward() ? 8 : 4;
  for (std::size_t i = 0; i < count; ++i) {
    os << (i ? ",\n      \"" : "\n      \"") << views[i].first << "\": ";
    write_layout(os, *views[i].second);
  }
  os << "\n    }";
  if (p.is_backward()) {
    os << ",\n    \"dout\": ";
    write_floats(os, p.dout, s.value_dim);
  }
}

int64_t read_kv_heads(const CaseReader& r, const json& pj, const Shape& s) {
  const json* j = r.optional(pj, "kv_heads");
  if (!j) return s.heads;
  const int64_t kv = r.integer(*j, "problem.kv_heads", 1, s.heads);
  if (s.heads % kv != 0)
    r.fail("problem.kv_heads = " + std::to_string(kv) + " does not divide heads = " + std::to_string(s.heads));
  return kv;
}

Broadcast read_broadcast(const CaseReader& r, const json& pj, const char* key) {
  Broadcast b;
  const json* j = r.optional(pj, key);
  if (!j) return b;
  const std::string field = std::string("problem.") + key;
  if (!j->is_object()) r.fail(field + " must be an object {\"per_batch\": bool, \"per_head\": bool, \"per_row\": bool}");
  for (auto [name, flag] : {std::pair{"per_batch", &b.per_batch}, std::pair{"per_head", &b.per_head},
                            std::pair{"per_row", &b.per_row}})
    if (const json* x = r.optional(*j, name)) *flag = r.boolean(*x, field + "." + name);
  return b;
}

void read_schema2_fields(const CaseReader& r, const json& pj, Problem& p) {
  const Shape& s = p.shape;
  p.bias_broadcast = read_broadcast(r, pj, "bias_broadcast");
  if (const json* bias = r.optional(pj, "bias")) {
    // Sized by the broadcast: at most batch * heads * q_len * kv_len, checked already.
    p.bias = r.floats(*bias, "problem.bias", p.bias_broadcast.size(s), p.dtype);
    for (std::size_t i = 0; i < p.bias.size(); ++i)
      if (p.bias[i] == std::numeric_limits<double>::infinity())
        r.fail("problem.bias[" + std::to_string(i) + "] is +inf (only -inf, which hides a key, is allowed)");
  }
  p.q_lens = read_lens(r, pj, "q_lens", s.batch, s.q_len);
  p.kv_lens = read_lens(r, pj, "kv_lens", s.batch, s.kv_len);
  p.window_left = read_window(r, pj, "window_left");
  p.window_right = read_window(r, pj, "window_right");
  if (const json* cap = r.optional(pj, "softcap")) {
    p.softcap = r.number(*cap, "problem.softcap");
    if (!(p.softcap == 0 || (std::isfinite(p.softcap) && p.softcap > 0)))
      r.fail("problem.softcap = " + shown(*cap) + " must be 0 (none) or finite and positive");
  }
  p.alibi_slopes = read_per_head(r, pj, "alibi_slopes", s.heads);
  p.sinks = read_per_head(r, pj, "sinks", s.heads);
  if (const json* lse = r.optional(pj, "lse_requested")) p.lse_requested = r.boolean(*lse, "problem.lse_requested");
  // A backward problem: dout has out's shape [batch][heads][q_len][value_dim]
  // (its size was checked with out's before anything was read).
  if (const json* dout = r.optional(pj, "dout")) p.dout = r.floats(*dout, "problem.dout", s.out_size(), p.dtype);
  if (const json* layouts = r.optional(pj, "layouts")) {
    if (!layouts->is_object()) r.fail("problem.layouts must be an object with q, k, v, out (and dout, dq, dk, dv)");
    const int64_t kvh = s.kv_head_count();
    const std::array<int64_t, 4> q_shape{s.batch, s.heads, s.q_len, s.head_dim},
        k_shape{s.batch, kvh, s.kv_len, s.head_dim}, v_shape{s.batch, kvh, s.kv_len, s.value_dim},
        out_shape{s.batch, s.heads, s.q_len, s.value_dim};
    const std::tuple<const char*, TensorLayout*, std::array<int64_t, 4>, bool> views[] = {
        {"q", &p.layouts.q, q_shape, false},          {"k", &p.layouts.k, k_shape, false},
        {"v", &p.layouts.v, v_shape, false},          {"out", &p.layouts.out, out_shape, false},
        {"dout", &p.layouts.dout, out_shape, true},   {"dq", &p.layouts.dq, q_shape, true},
        {"dk", &p.layouts.dk, k_shape, true},         {"dv", &p.layouts.dv, v_shape, true}};
    for (const auto& [name, layout, extents, gradient] : views)
      if (const json* l = r.optional(*layouts, name)) {
        const std::string field = std::string("problem.layouts.") + name;
        if (gradient && !p.is_backward())
          r.fail(field + " is given but problem.dout is not (only a backward problem has gradient views)");
        *layout = read_layout(r, *l, field, extents);
      }
  }
}

void refuse_schema2_fields(const CaseReader& r, const json& pj) {
  for (const char* key : kSchema2Keys)
    if (pj.contains(key)) r.fail(std::string("problem.") + key + " needs schema_version 2 (this file says 1)");
}

}  // namespace attncheck
