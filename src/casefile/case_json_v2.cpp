// Schema 2 of case files: the ABI v2 fields of a Problem (case_json_v2.h).
// Written in full by case_json_problem.cpp from the field list (every field,
// neutral ones too, so a file documents itself); read with every field
// optional (a hand-written case gives what it uses), and checked as case_json.cpp checks the rest: sizes before allocation, values
// in range, each refusal naming the field.
#include "casefile/case_json_v2.h"

#include <algorithm>
#include <array>
#include <limits>
#include <type_traits>

#include "casefile/case_json_problem.h"
#include "casefile/float_text.h"
#include "problem/problem_fields.h"

namespace attncheck {

namespace {

using nlohmann::json;

constexpr const char* kAxisNames[3] = {"batch", "head", "row"};

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

// A packed side's prefix sums: batch + 1 of them, cu[0] = 0, each slot
// within 0..bound, cu[batch] <= total (read before the lists); total is given
// exactly with them (docs/casefile.md, "Packed batches").
std::vector<int32_t> read_cu_seqlens(const CaseReader& r, const json& pj, const char* key, int64_t batch,
                                     int64_t bound, int64_t total, const char* total_name) {
  const json* j = r.optional(pj, key);
  const std::string field = std::string("problem.") + key;
  if (!j) {
    if (total != 0) r.fail(std::string("problem.") + total_name + " = " + std::to_string(total) + " is given without " + field);
    return {};
  }
  if (!j->is_array()) r.fail(field + " must be an array of integers or null");
  if (static_cast<int64_t>(j->size()) != batch + 1)
    r.fail(field + " holds " + std::to_string(j->size()) + " entries but batch + 1 is " + std::to_string(batch + 1));
  std::vector<int32_t> cu;
  for (std::size_t b = 0; b < j->size(); ++b) {
    const std::string at = field + "[" + std::to_string(b) + "]";
    const int64_t prev = b == 0 ? 0 : cu.back();
    // cu[0] = 0; each later entry within its slot's bound of the one before.
    cu.push_back(static_cast<int32_t>(r.integer((*j)[b], at, prev, b == 0 ? 0 : std::min(prev + bound, total))));
  }
  if (total < std::max<int64_t>(1, cu.back()))
    r.fail(std::string("problem.") + total_name + " = " + std::to_string(total) + " is below max(1, " + field + "[batch])");
  return cu;
}

// A paged problem's table: batch * max_pages_per_seq entries, each a page of
// 0..num_pages-1 (read after the paging's numbers, which it needs; given
// exactly with them).
std::vector<int32_t> read_block_table(const CaseReader& r, const json& pj, const Problem& p) {
  const json* j = r.optional(pj, "block_table");
  if (!j) {
    if (p.max_pages_per_seq != 0 || p.num_pages != 0 || p.page_size != 0 || p.page_poison != 0)
      r.fail("problem.max_pages_per_seq, num_pages, page_size or page_poison is given without problem.block_table");
    return {};
  }
  if (p.max_pages_per_seq == 0 || p.num_pages == 0 || p.page_size == 0)
    r.fail("problem.block_table is given without max_pages_per_seq, num_pages and page_size");
  if (!j->is_array()) r.fail("problem.block_table must be an array of integers or null");
  const int64_t want = p.shape.batch * p.max_pages_per_seq;
  if (static_cast<int64_t>(j->size()) != want)
    r.fail("problem.block_table holds " + std::to_string(j->size()) + " entries but batch * max_pages_per_seq is " +
           std::to_string(want));
  std::vector<int32_t> table;
  for (std::size_t e = 0; e < j->size(); ++e)
    table.push_back(static_cast<int32_t>(
        r.integer((*j)[e], "problem.block_table[" + std::to_string(e) + "]", 0, p.num_pages - 1)));
  return table;
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
  for_each_field<Broadcast>(
      [&](const auto& f, bool& flag) {
        if (const json* x = r.optional(*j, f.name)) flag = r.boolean(*x, field + "." + f.name);
      },
      b);
  return b;
}

namespace {

// The scale: a number, a float's text, or "default" (NaN, as Problem holds it).
double read_scale(const CaseReader& r, const json& pj) {
  const json& scale = r.member(pj, "problem.", "scale");
  if (scale.is_number()) return scale.get<double>();
  if (!scale.is_string()) r.fail("problem.scale must be a number or \"default\", got " + shown(scale));
  if (scale.get_ref<const std::string&>() == "default") return std::numeric_limits<double>::quiet_NaN();
  const auto x = parse_float_text(scale.get_ref<const std::string&>());
  if (!x || std::isnan(*x)) r.fail("problem.scale = " + shown(scale) + " is not a number or \"default\"");
  return *x;
}

double read_softcap(const CaseReader& r, const json& pj) {
  const json* cap = r.optional(pj, "softcap");
  if (!cap) return 0;
  const double c = r.number(*cap, "problem.softcap");
  if (!(c == 0 || (std::isfinite(c) && c > 0)))
    r.fail("problem.softcap = " + shown(*cap) + " must be 0 (none) or finite and positive");
  return c;
}

// The mask: a string of '0'/'1' of the length its broadcast gives, or null.
std::vector<uint8_t> read_mask(const CaseReader& r, const json& pj, const Problem& p, int64_t want) {
  const json* mask = r.optional(pj, "mask");
  if (!mask) return {};
  if (!mask->is_string()) r.fail("problem.mask must be a string of '0'/'1' or null");
  const std::string& m = mask->get_ref<const std::string&>();
  if (static_cast<int64_t>(m.size()) != want)
    r.fail("problem.mask holds " + std::to_string(m.size()) + " characters but the shape " +
           (p.mask_broadcast.full() ? "needs " : "and mask_broadcast need ") + std::to_string(want));
  std::vector<uint8_t> bits;
  bits.reserve(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i] != '0' && m[i] != '1') r.fail("problem.mask[" + std::to_string(i) + "] is not '0' or '1'");
    bits.push_back(m[i] == '1' ? 1 : 0);
  }
  return bits;
}

// The extents, each required and within the limits (kv_heads: schema 2's,
// absent meaning heads), then every tensor the call involves checked against
// the limit before any allocation.
void read_shape(const CaseReader& r, const json& pj, Shape& s, Since level) {
  for_each_field<Shape>(
      [&](const auto& f, int64_t& extent) {
        if (f.attrs.since > level) return;
        if constexpr (same_member<std::remove_cvref_t<decltype(f)>::member, &Shape::kv_heads>())
          extent = read_kv_heads(r, pj, s);  // after heads, which it divides
        else
          extent = r.extent(pj, f.name);
      },
      s);
  if (level == Since::v1) refuse_schema2_fields(r, pj);
  r.check_product("q", {s.batch, s.heads, s.q_len, s.head_dim});
  r.check_product("k", {s.batch, s.kv_head_count(), s.kv_len, s.head_dim});
  r.check_product("v", {s.batch, s.kv_head_count(), s.kv_len, s.value_dim});
  r.check_product("out", {s.batch, s.heads, s.q_len, s.value_dim});
  r.check_product("the logits (and mask)", {s.batch, s.heads, s.q_len, s.kv_len});
}

// The views given (each optional: absent is dense); a gradient view only in
// a backward problem's file (one with a dout).
ViewLayouts read_layouts(const CaseReader& r, const json& pj, const Shape& s) {
  ViewLayouts views;
  const json* layouts = r.optional(pj, "layouts");
  if (!layouts) return views;
  if (!layouts->is_object()) r.fail("problem.layouts must be an object with q, k, v, out (and dout, dq, dk, dv)");
  for_each_field<ViewLayouts>(
      [&](const auto& f, TensorLayout& layout) {
        const json* l = r.optional(*layouts, f.name);
        if (!l) return;
        const std::string field = std::string("problem.layouts.") + f.name;
        if (f.attrs.since == Since::backward && !r.optional(pj, "dout"))
          r.fail(field + " is given but problem.dout is not (only a backward problem has gradient views)");
        layout = read_layout(r, *l, field, f.attrs.extents(s));
      },
      views);
  return views;
}

// One field of the list (problem/problem_fields.h). A field of a kind no
// step below reads is a compile error: say how a case file gives it.
template <class F, class T>
void read_field(const F& f, T& x, const CaseReader& r, const json& pj, Problem& p, Since level) {
  constexpr auto m = F::member;
  const std::string field = std::string("problem.") + f.name;
  if constexpr (std::is_same_v<T, DType>) {
    const std::string name = r.string(pj, "problem.", f.name, true);
    const auto dt = dtype_from_name(name);
    if (!dt) r.fail(field + " \"" + name + "\" is not one of " + dtype_names());
    x = *dt;
  } else if constexpr (std::is_same_v<T, Shape>) {
    read_shape(r, pj, x, level);
  } else if constexpr (std::is_same_v<T, Causal>) {
    const std::string name = r.string(pj, "problem.", f.name, true);
    if (name == "none") x = Causal::none;
    else if (name == "top_left") x = Causal::top_left;
    else if (name == "bottom_right") x = Causal::bottom_right;
    else r.fail(field + " \"" + name + "\" is not one of none, top_left, bottom_right");
  } else if constexpr (same_member<m, &Problem::scale>()) {
    x = read_scale(r, pj);
  } else if constexpr (same_member<m, &Problem::softcap>()) {
    x = read_softcap(r, pj);
  } else if constexpr (same_member<m, &Problem::window_left>() || same_member<m, &Problem::window_right>()) {
    x = read_window(r, pj, f.name);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (const json* j = r.optional(pj, f.name)) x = r.boolean(*j, field);
  } else if constexpr (std::is_same_v<T, Broadcast>) {
    x = read_broadcast(r, pj, f.name);
  } else if constexpr (std::is_same_v<T, ViewLayouts>) {
    x = read_layouts(r, pj, p.shape);
  } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
    x = read_mask(r, pj, p, f.attrs.size(p));
  } else if constexpr (same_member<m, &Problem::q_lens>()) {
    x = read_lens(r, pj, f.name, p.shape.batch, p.shape.q_len);
  } else if constexpr (same_member<m, &Problem::kv_lens>()) {
    x = read_lens(r, pj, f.name, p.shape.batch, p.shape.kv_len);
  } else if constexpr (same_member<m, &Problem::cu_seqlens_q>()) {
    x = read_cu_seqlens(r, pj, f.name, p.shape.batch, p.shape.q_len, p.total_q, "total_q");
  } else if constexpr (same_member<m, &Problem::cu_seqlens_k>()) {
    x = read_cu_seqlens(r, pj, f.name, p.shape.batch, p.shape.kv_len, p.total_k, "total_k");
  } else if constexpr (same_member<m, &Problem::total_q>() || same_member<m, &Problem::total_k>()) {
    if (const json* j = r.optional(pj, f.name)) {
      x = r.integer(*j, field, 0, std::min<int64_t>(kMaxCaseElements, std::numeric_limits<int32_t>::max()));
      const Shape& s = p.shape;  // the packed buffers: [total][heads][dim]
      if constexpr (same_member<m, &Problem::total_q>()) r.check_product("the packed q (and out)", {x, s.heads, std::max(s.head_dim, s.value_dim)});
      else r.check_product("the packed k (and v)", {x, s.kv_head_count(), std::max(s.head_dim, s.value_dim)});
    }
  } else if constexpr (same_member<m, &Problem::block_table>()) {
    x = read_block_table(r, pj, p);
  } else if constexpr (same_member<m, &Problem::max_pages_per_seq>() || same_member<m, &Problem::num_pages>() ||
                       same_member<m, &Problem::page_size>()) {
    // Each at least 1 when given (absent: not paged); the pool [num_pages][page_size][kv_heads][dim] within the limit.
    if (const json* j = r.optional(pj, f.name)) {
      x = r.integer(*j, field, 1, std::min<int64_t>(kMaxCaseElements, std::numeric_limits<int32_t>::max()));
      if constexpr (same_member<m, &Problem::page_size>()) {
        const Shape& s = p.shape;
        r.check_product("the page pool of k (and v)", {p.num_pages, x, s.kv_head_count(), std::max(s.head_dim, s.value_dim)});
      }
    }
  } else if constexpr (same_member<m, &Problem::alibi_batch_stride>()) {
    // Absent: 0, the slopes [heads]; given: at least heads, the slopes [batch][heads] in the call's rows of x floats.
    if (const json* j = r.optional(pj, f.name)) {
      x = r.integer(*j, field, std::max<int64_t>(1, p.shape.heads), std::min<int64_t>(kMaxCaseElements, std::numeric_limits<int32_t>::max()));
      r.check_product("the per-batch ALiBi slopes", {p.shape.batch, x});
      if (!r.optional(pj, "alibi_slopes")) r.fail(field + " is given but problem.alibi_slopes is not");
    }
  } else if constexpr (same_member<m, &Problem::k_broadcast>() || same_member<m, &Problem::v_broadcast>()) {
    // Absent or 0: dense; 1 the batch axis, 2 the kv-head axis, 3 both sent with stride 0
    // (a file with one of them written has the other too, 0 when only one is expanded).
    if (const json* j = r.optional(pj, f.name)) x = r.integer(*j, field, 0, 3);
  } else if constexpr (same_member<m, &Problem::numerics>()) {
    // Absent: 0; the ATTNCHECK_NUMERICS_* bits that apply to the call (Problem::inconsistency
    // says where each applies and what it needs of q).
    if (const json* j = r.optional(pj, f.name)) x = r.integer(*j, field, 0, 3);
  } else if constexpr (same_member<m, &Problem::page_poison>()) {
    if (const json* j = r.optional(pj, f.name)) x = r.integer(*j, field, 0, kPagePoisonCodes - 1);
  } else if constexpr (std::is_same_v<T, KvFormat>) {
    // Absent: the dtype (neutral); the names are the spec's, lower case (kv_format.h).
    if (const json* j = r.optional(pj, f.name)) {
      const std::string name = r.string(pj, "problem.", f.name, true);
      const auto kf = kv_format_from_name(name);
      if (!kf) r.fail(field + " \"" + name + "\" is not a stored format (dtype, f16, bf16, fp8_e4m3, fp8_e5m2, int8, int4, q8_0, q4_0)");
      if (!kv_format_allows(*kf, p.dtype))
        r.fail(field + " \"" + name + "\" does not come with dtype " + std::string(dtype_name(p.dtype)));
      const int64_t channels = same_member<m, &Problem::k_format>() ? p.shape.head_dim : p.shape.value_dim;
      if (!kv_channels_fit(*kf, channels))
        r.fail(field + " \"" + name + "\": " + std::to_string(channels) + " channels are not a whole number of " +
               name + " units");
      x = *kf;
      (void)j;
    }
  } else if constexpr (std::is_same_v<T, ScaleGranularity>) {
    if (r.optional(pj, f.name)) {
      const std::string name = r.string(pj, "problem.", f.name, true);
      bool found = false;
      for (ScaleGranularity g : kScaleGranularities)
        if (scale_granularity_name(g) == name) x = g, found = true;
      if (!found) r.fail(field + " \"" + name + "\" is not per_tensor, per_kv_head, per_batch_kv_head or per_kv_head_channel");
    }
  } else if constexpr (same_member<m, &Problem::k_scales>() || same_member<m, &Problem::v_scales>()) {
    // float32 scales (scaled formats) or binary16 d's (block formats); sized by the format.
    const json* j = r.optional(pj, f.name);
    const int64_t want = f.attrs.size(p);
    if (!j || j->is_null()) {
      if (want != 0) r.fail(field + " is missing: its format needs " + std::to_string(want) + " values");
      return;
    }
    const bool is_k = same_member<m, &Problem::k_scales>();
    const KvFormat kf = is_k ? p.k_format : p.v_format;
    if (want == 0) r.fail(field + " is given but " + std::string(kv_format_name(kf)) + " has no scales");
    x = r.floats(*j, field, want, info(kf).block_scaled ? DType::f16 : DType::f32);
  } else if constexpr (same_member<m, &Problem::alibi_slopes>() || same_member<m, &Problem::sinks>()) {
    x = read_per_head(r, pj, f.name, f.attrs.size(p));
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    // A tensor of the problem's dtype, sized by the shape (and its broadcast):
    // schema 1's (q, k, v) required, the later ones optional.
    const json* j = f.attrs.since == Since::v1 ? &r.member(pj, "problem.", f.name) : r.optional(pj, f.name);
    if (!j) return;
    // k and v in a stored format hold real values (exact in binary64, problem.h): the
    // problem's consistency checks them against the format and its scales.
    DType exact_in = p.dtype;
    if constexpr (same_member<m, &Problem::k>()) exact_in = p.k_format != KvFormat::dtype ? DType::f64 : p.dtype;
    if constexpr (same_member<m, &Problem::v>()) exact_in = p.v_format != KvFormat::dtype ? DType::f64 : p.dtype;
    x = r.floats(*j, field, f.attrs.size(p), exact_in);
    if constexpr (same_member<m, &Problem::bias>())
      for (std::size_t i = 0; i < x.size(); ++i)
        if (x[i] == std::numeric_limits<double>::infinity())
          r.fail(field + "[" + std::to_string(i) + "] is +inf (only -inf, which hides a key, is allowed)");
  } else {
    static_assert(!sizeof(T), "a new field: say how a case file gives it");
  }
}

}  // namespace

void read_problem_json(const CaseReader& r, const json& pj, int schema_version, Problem& p) {
  const Since level = schema_version == 1 ? Since::v1 : Since::numerics;
  // Every field that is not a list first, in the list's order: the lists'
  // lengths are read from them (the shape, the broadcasts).
  for (const bool lists : {false, true})
    for_each_field<Problem>(
        [&](const auto& f, auto& x) {
          if (f.attrs.since > level || is_vector<std::remove_cvref_t<decltype(x)>> != lists) return;
          read_field(f, x, r, pj, p, level);
        },
        p);
}

void refuse_schema2_fields(const CaseReader& r, const json& pj) {
  static const std::vector<std::string> keys = schema2_keys();  // the list's, in its order
  for (const std::string& key : keys)
    if (pj.contains(key)) r.fail("problem." + key + " needs schema_version 2 (this file says 1)");
}

}  // namespace attncheck
