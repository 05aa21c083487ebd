// The one field list of a Problem (and of the records it holds): every
// serialisation, hash, memo key and comparison of a Problem is derived from
// it (problem/field_list.h says how):
//   the --jobs result wire      run/law_result_wire.cpp   every field, in list order, native bytes
//   the oracle memo's key       oracle/oracle_memo.cpp    the fields with `oracle`
//   the case file (JSON)        casefile/case_json*.cpp   list order; `since` picks the schema
//   the case hash               casefile/case_hash.cpp    the order of `hash`, by `since`
//   Problem::operator==         problem.cpp               every field, doubles by their bits
//   the sample memo's sizes     gen/sample_memo.cpp   every list's elements
// (The host's call wire is derived from the ABI call's own list, plugin/call_wire.h.)
// A new member of Problem is one line here (and its JSON reader's checks in
// case_json_v2.cpp); left out, it is a compile error at the static_assert
// below each list.
//
// Attributes of a field (ProblemAttrs):
//   since   the case-file schema that holds it: v1 fields in every file, v2
//           fields only in a schema-2 file (casefile/case_json_v2.h), backward
//           fields only in a backward problem's file. The case hash feeds the
//           v1 fields, then (schema 2 only) the number 2 and the v2 fields,
//           then (backward only) kBackwardFeature and the backward fields, so
//           that every older file keeps its name. A record's leaves (Shape's
//           kv_heads, ViewLayouts' gradient views) carry their own.
//   hash    the field's place in the case hash. The hash names every case file
//           on disk, so a field's place never changes: a new field takes the
//           next number. (The hash's order differs from the file's in three
//           places, bias_broadcast before bias, alibi_slopes and sinks before
//           q_lens, dout before the gradient views, as they did before the
//           list existed.)
//   oracle  the forward oracle reads it: part of the oracle memo's key. The
//           call's layouts, a dout and the lse request are not.
//   row     a tensor's row width in a case file (one row a line); none: one line.
//   size    a list's length, from the fields a reader has read before it
//           (every field that is not a list: its shape, its broadcast).
//   extents a view's extents (ViewLayouts' members), which bound its gaps.
//
// Exceptions, each written where its format is: Shape::kv_heads is written,
// hashed, keyed and compared as kv_head_count() (0 means "as many as heads");
// a NaN scale is written "default"; a Broadcast is hashed as three bits.
#pragma once

#include <array>
#include <cstdint>
#include <tuple>

#include "problem/field_list.h"
#include "problem/problem.h"
#include "problem/kv_storage.h"

namespace attncheck {

// `packed` is not a step after `backward`: its fields (ABI v3's packing) are in
// the file and the hash of a packed problem only, forward or backward, so
// every file without packing keeps its bytes and its name. `paged` likewise
// (ABI v3's paging): in a paged problem's file and hash only; `kv_formats`
// (ABI v3's stored K and V formats) in the file and hash of a problem that
// stores K or V in a format other than its dtype only; `alibi_batch` (ABI v3's
// ALiBi slopes per (batch, head)) in the file and hash of a problem whose
// alibi_batch_stride is not 0 only.
// `v_view` (ABI v3's V as a view of K) in the file and hash of a problem whose
// v is a view of k only.
// `broadcast_kv` (ABI v3's K and V expanded) in the file and hash of a problem
// that sends k or v with a stride of 0 only.
// `numerics` (ABI v3's declared numerics that apply to the call) in the file and
// hash of a problem whose numerics is not 0 only.
enum class Since : uint8_t { v1, v2, backward, packed, paged, kv_formats, alibi_batch, v_view, broadcast_kv, numerics };

struct ProblemAttrs {
  Since since = Since::v1;
  int hash = -1;
  bool oracle = true;
  int64_t (*row)(const Shape&) = nullptr;
  // A list's length from the fields read before it (its shape, its broadcast).
  int64_t (*size)(const Problem&) = nullptr;
  // A view's extents {batch, heads, rows, cols} (ViewLayouts' members).
  std::array<int64_t, 4> (*extents)(const Shape&) = nullptr;
};

namespace problem_fields_detail {
constexpr int64_t head_dim(const Shape& s) { return s.head_dim; }
constexpr int64_t value_dim(const Shape& s) { return s.value_dim; }
constexpr int64_t kv_len(const Shape& s) { return s.kv_len; }
inline std::array<int64_t, 4> q_view(const Shape& s) { return {s.batch, s.heads, s.q_len, s.head_dim}; }
inline std::array<int64_t, 4> k_view(const Shape& s) { return {s.batch, s.kv_head_count(), s.kv_len, s.head_dim}; }
inline std::array<int64_t, 4> v_view(const Shape& s) { return {s.batch, s.kv_head_count(), s.kv_len, s.value_dim}; }
inline std::array<int64_t, 4> out_view(const Shape& s) { return {s.batch, s.heads, s.q_len, s.value_dim}; }
}  // namespace problem_fields_detail

// The file's order: kv_heads is written after heads.
template <>
struct FieldsOf<Shape> {
  static constexpr auto list = std::tuple{
      field<&Shape::batch>("batch", ProblemAttrs{}),
      field<&Shape::heads>("heads", ProblemAttrs{}),
      field<&Shape::kv_heads>("kv_heads", ProblemAttrs{.since = Since::v2}),
      field<&Shape::q_len>("q_len", ProblemAttrs{}),
      field<&Shape::kv_len>("kv_len", ProblemAttrs{}),
      field<&Shape::head_dim>("head_dim", ProblemAttrs{}),
      field<&Shape::value_dim>("value_dim", ProblemAttrs{}),
  };
};
static_assert(fields_complete<Shape>(), "a member of Shape is missing from its field list");

template <>
struct FieldsOf<Broadcast> {
  static constexpr auto list = std::tuple{
      field<&Broadcast::per_batch>("per_batch", ProblemAttrs{}),
      field<&Broadcast::per_head>("per_head", ProblemAttrs{}),
      field<&Broadcast::per_row>("per_row", ProblemAttrs{}),
  };
};
static_assert(fields_complete<Broadcast>(), "a member of Broadcast is missing from its field list");

template <>
struct FieldsOf<TensorLayout> {
  static constexpr auto list = std::tuple{
      field<&TensorLayout::order>("order", ProblemAttrs{}),
      field<&TensorLayout::gap>("gap", ProblemAttrs{}),
  };
};
static_assert(fields_complete<TensorLayout>(), "a member of TensorLayout is missing from its field list");

// The gradient views are in a backward problem's file only.
template <>
struct FieldsOf<ViewLayouts> {
  static constexpr auto list = std::tuple{
      field<&ViewLayouts::q>("q", ProblemAttrs{.since = Since::v2, .extents = problem_fields_detail::q_view}),
      field<&ViewLayouts::k>("k", ProblemAttrs{.since = Since::v2, .extents = problem_fields_detail::k_view}),
      field<&ViewLayouts::v>("v", ProblemAttrs{.since = Since::v2, .extents = problem_fields_detail::v_view}),
      field<&ViewLayouts::out>("out", ProblemAttrs{.since = Since::v2, .extents = problem_fields_detail::out_view}),
      field<&ViewLayouts::dout>("dout", ProblemAttrs{.since = Since::backward, .extents = problem_fields_detail::out_view}),
      field<&ViewLayouts::dq>("dq", ProblemAttrs{.since = Since::backward, .extents = problem_fields_detail::q_view}),
      field<&ViewLayouts::dk>("dk", ProblemAttrs{.since = Since::backward, .extents = problem_fields_detail::k_view}),
      field<&ViewLayouts::dv>("dv", ProblemAttrs{.since = Since::backward, .extents = problem_fields_detail::v_view}),
  };
};
static_assert(fields_complete<ViewLayouts>(), "a member of ViewLayouts is missing from its field list");

// In the case file's order (casefile/case_file.h).
template <>
struct FieldsOf<Problem> {
  static constexpr auto list = std::tuple{
      field<&Problem::dtype>("dtype", ProblemAttrs{.hash = 0}),
      field<&Problem::shape>("shape", ProblemAttrs{.hash = 1}),  // its members are the file's keys
      field<&Problem::causal>("causal", ProblemAttrs{.hash = 2}),
      field<&Problem::scale>("scale", ProblemAttrs{.hash = 3}),
      field<&Problem::q>("q", ProblemAttrs{.hash = 4, .row = problem_fields_detail::head_dim,
                                           .size = [](const Problem& p) { return p.shape.q_size(); }}),
      field<&Problem::k>("k", ProblemAttrs{.hash = 5, .row = problem_fields_detail::head_dim,
                                           .size = [](const Problem& p) { return p.shape.k_size(); }}),
      field<&Problem::v>("v", ProblemAttrs{.hash = 6, .row = problem_fields_detail::value_dim,
                                           .size = [](const Problem& p) { return p.shape.v_size(); }}),
      field<&Problem::mask>("mask", ProblemAttrs{.hash = 7, .size = [](const Problem& p) {
                                                   return p.mask_broadcast.size(p.shape);
                                                 }}),
      field<&Problem::mask_broadcast>("mask_broadcast", ProblemAttrs{.since = Since::v2, .hash = 8}),
      field<&Problem::bias>("bias", ProblemAttrs{.since = Since::v2, .hash = 10, .row = problem_fields_detail::kv_len,
                                                 .size = [](const Problem& p) { return p.bias_broadcast.size(p.shape); }}),
      field<&Problem::bias_broadcast>("bias_broadcast", ProblemAttrs{.since = Since::v2, .hash = 9}),
      field<&Problem::q_lens>("q_lens", ProblemAttrs{.since = Since::v2, .hash = 13,
                                                     .size = [](const Problem& p) { return p.shape.batch; }}),
      field<&Problem::kv_lens>("kv_lens", ProblemAttrs{.since = Since::v2, .hash = 14,
                                                       .size = [](const Problem& p) { return p.shape.batch; }}),
      field<&Problem::window_left>("window_left", ProblemAttrs{.since = Since::v2, .hash = 15}),
      field<&Problem::window_right>("window_right", ProblemAttrs{.since = Since::v2, .hash = 16}),
      field<&Problem::softcap>("softcap", ProblemAttrs{.since = Since::v2, .hash = 17}),
      // [heads], or [batch][heads] with alibi_batch_stride (read before it: not a list).
      field<&Problem::alibi_slopes>("alibi_slopes", ProblemAttrs{.since = Since::v2, .hash = 11,
                                                                 .size = [](const Problem& p) {
                                                                   return (p.alibi_per_batch() ? p.shape.batch : 1) *
                                                                          p.shape.heads;
                                                                 }}),
      field<&Problem::sinks>("sinks", ProblemAttrs{.since = Since::v2, .hash = 12,
                                                   .size = [](const Problem& p) { return p.shape.heads; }}),
      field<&Problem::lse_requested>("lse_requested", ProblemAttrs{.since = Since::v2, .hash = 18, .oracle = false}),
      field<&Problem::layouts>("layouts", ProblemAttrs{.since = Since::v2, .hash = 20, .oracle = false}),
      field<&Problem::dout>("dout", ProblemAttrs{.since = Since::backward, .hash = 19, .oracle = false,
                                                 .row = problem_fields_detail::value_dim,
                                                 .size = [](const Problem& p) { return p.shape.out_size(); }}),
      field<&Problem::total_q>("total_q", ProblemAttrs{.since = Since::packed, .hash = 21, .oracle = false}),
      field<&Problem::total_k>("total_k", ProblemAttrs{.since = Since::packed, .hash = 22, .oracle = false}),
      field<&Problem::cu_seqlens_q>("cu_seqlens_q", ProblemAttrs{.since = Since::packed, .hash = 23,
                                                                 .size = [](const Problem& p) { return p.shape.batch + 1; }}),
      field<&Problem::cu_seqlens_k>("cu_seqlens_k", ProblemAttrs{.since = Since::packed, .hash = 24,
                                                                 .size = [](const Problem& p) { return p.shape.batch + 1; }}),
      // Paging's own (the oracle reads the logical k and v, never the table).
      field<&Problem::max_pages_per_seq>("max_pages_per_seq", ProblemAttrs{.since = Since::paged, .hash = 25, .oracle = false}),
      field<&Problem::num_pages>("num_pages", ProblemAttrs{.since = Since::paged, .hash = 26, .oracle = false}),
      field<&Problem::page_size>("page_size", ProblemAttrs{.since = Since::paged, .hash = 27, .oracle = false}),
      field<&Problem::page_poison>("page_poison", ProblemAttrs{.since = Since::paged, .hash = 28, .oracle = false}),
      field<&Problem::block_table>("block_table", ProblemAttrs{.since = Since::paged, .hash = 29, .oracle = false,
                                                               .size = [](const Problem& p) {
                                                                 return p.shape.batch * p.max_pages_per_seq;
                                                               }}),
      // The stored formats' own (the oracle reads the real k and v, and the bound
      // the formats: one rounding of each real element, problem/kv_storage.h).
      field<&Problem::k_format>("k_format", ProblemAttrs{.since = Since::kv_formats, .hash = 30}),
      field<&Problem::v_format>("v_format", ProblemAttrs{.since = Since::kv_formats, .hash = 31}),
      field<&Problem::k_scale_granularity>("k_scale_granularity", ProblemAttrs{.since = Since::kv_formats, .hash = 32}),
      field<&Problem::v_scale_granularity>("v_scale_granularity", ProblemAttrs{.since = Since::kv_formats, .hash = 33}),
      field<&Problem::k_scales>("k_scales", ProblemAttrs{.since = Since::kv_formats, .hash = 34,
                                                         .size = [](const Problem& p) { return kv_scales_size(p, true); }}),
      field<&Problem::v_scales>("v_scales", ProblemAttrs{.since = Since::kv_formats, .hash = 35,
                                                         .size = [](const Problem& p) { return kv_scales_size(p, false); }}),
      // ALiBi per (batch, head): whether alibi_slopes is [batch][heads] (the
      // oracle reads that), and the call's row stride (gaps poisoned).
      field<&Problem::alibi_batch_stride>("alibi_batch_stride", ProblemAttrs{.since = Since::alibi_batch, .hash = 36}),
      // V as a view of K (MLA): how the call lays v out; the oracle reads v's values, which equal k's channels.
      field<&Problem::v_view_of_k>("v_view_of_k", ProblemAttrs{.since = Since::v_view, .hash = 37, .oracle = false}),
      // K and V expanded: which axes the call sends with stride 0 (the oracle reads the values).
      field<&Problem::k_broadcast>("k_broadcast", ProblemAttrs{.since = Since::broadcast_kv, .hash = 38, .oracle = false}),
      field<&Problem::v_broadcast>("v_broadcast", ProblemAttrs{.since = Since::broadcast_kv, .hash = 39, .oracle = false}),
      // The declared numerics bits that apply to the call: the oracle's bound widens by them.
      field<&Problem::numerics>("numerics", ProblemAttrs{.since = Since::numerics, .hash = 40}),
  };
};
static_assert(fields_complete<Problem>(), "a member of Problem is missing from its field list");

namespace problem_fields_detail {
// Each place in the case hash is taken once, and they run 0, 1, 2, ... with no gap.
constexpr bool hash_places_are_a_permutation() {
  constexpr std::size_t n = std::tuple_size_v<decltype(FieldsOf<Problem>::list)>;
  const std::array<int, n> places =
      std::apply([](const auto&... f) { return std::array<int, n>{f.attrs.hash...}; }, FieldsOf<Problem>::list);
  for (std::size_t i = 0; i < n; ++i) {
    int times = 0;
    for (int place : places) times += place == static_cast<int>(i);
    if (times != 1) return false;
  }
  return true;
}
static_assert(hash_places_are_a_permutation(), "Problem's `hash` places must be 0 .. fields - 1, each once");

template <class T>
constexpr bool is_flattened = std::is_same_v<T, Shape> || std::is_same_v<T, ViewLayouts>;
}  // namespace problem_fields_detail

// Shape's member `extent` (a field of its list) as the formats see it:
// kv_heads as kv_head_count() (0 means "as many as heads"), the rest as they are.
template <class F>
constexpr int64_t written_extent(const F&, const Shape& s) {
  if constexpr (same_member<F::member, &Shape::kv_heads>()) return s.kv_head_count();
  else return s.*F::member;
}

// The values of records of type T (Problem, or one it holds) as the formats
// see them, leaf by leaf: f(field, value...) for each field whose value is not
// a Shape or ViewLayouts (those are visited member by member; a Broadcast or
// a TensorLayout, which the formats write whole, is one leaf). A leaf takes
// the enclosing field's `hash` place and `oracle`, and the later of the two
// `since`s. Shape::kv_heads is visited as kv_head_count() (its one exception).
template <class T, class F, class... R>
constexpr void for_each_leaf(F&& f, const R&... records) {
  for_each_field<T>(
      [&](const auto& outer, const auto&... value) {
        using V = std::remove_cvref_t<decltype((value, ...))>;
        if constexpr (problem_fields_detail::is_flattened<V>) {
          for_each_field<V>(
              [&](auto leaf, const auto&... x) {
                leaf.attrs.hash = outer.attrs.hash;
                leaf.attrs.oracle = outer.attrs.oracle && leaf.attrs.oracle;
                if (outer.attrs.since > leaf.attrs.since) leaf.attrs.since = outer.attrs.since;
                if constexpr (std::is_same_v<V, Shape>) f(leaf, written_extent(leaf, value)...);
                else f(leaf, x...);
              },
              value...);
        } else {
          f(outer, value...);
        }
      },
      records...);
}

}  // namespace attncheck
