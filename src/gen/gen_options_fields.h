// The one field list of GenOptions and of ShapeDomain (problem/field_list.h):
// the sample memo's key (gen/sample_memo.cpp) is derived from it, so an
// option the key missed (which would hand one options' problems to another)
// cannot be added: a member left out of the list is a compile error at the
// static_assert below it.
#pragma once

#include <tuple>

#include "problem/field_list.h"
#include "gen/gen_options.h"

namespace attncheck {

template <>
struct FieldsOf<ShapeDomain> {
  static constexpr auto list = std::tuple{
      field<&ShapeDomain::name>("name"),           field<&ShapeDomain::weight>("weight"),
      field<&ShapeDomain::max_batch>("max_batch"), field<&ShapeDomain::max_heads>("max_heads"),
      field<&ShapeDomain::min_q_len>("min_q_len"), field<&ShapeDomain::max_q_len>("max_q_len"),
      field<&ShapeDomain::min_kv_len>("min_kv_len"), field<&ShapeDomain::max_kv_len>("max_kv_len"),
      field<&ShapeDomain::q_equals_kv>("q_equals_kv"), field<&ShapeDomain::q_below_kv>("q_below_kv"),
      field<&ShapeDomain::ramped>("ramped"),       field<&ShapeDomain::masks>("masks"),
      field<&ShapeDomain::log_lengths>("log_lengths"), field<&ShapeDomain::max_dim>("max_dim"),
      field<&ShapeDomain::families>("families"),
      field<&ShapeDomain::from_size>("from_size"), field<&ShapeDomain::to_size>("to_size"),
      field<&ShapeDomain::size_chance>("size_chance"),
  };
};
static_assert(fields_complete<ShapeDomain>(), "a member of ShapeDomain is missing from its field list");

template <>
struct FieldsOf<GenOptions> {
  static constexpr auto list = std::tuple{
      field<&GenOptions::dtypes>("dtypes"),
      field<&GenOptions::min_batch>("min_batch"),
      field<&GenOptions::max_batch>("max_batch"),
      field<&GenOptions::min_heads>("min_heads"),
      field<&GenOptions::max_heads>("max_heads"),
      field<&GenOptions::min_q_len>("min_q_len"),
      field<&GenOptions::max_q_len>("max_q_len"),
      field<&GenOptions::min_kv_len>("min_kv_len"),
      field<&GenOptions::max_kv_len>("max_kv_len"),
      field<&GenOptions::min_head_dim>("min_head_dim"),
      field<&GenOptions::max_head_dim>("max_head_dim"),
      field<&GenOptions::max_value_dim>("max_value_dim"),
      field<&GenOptions::same_dims>("same_dims"),
      field<&GenOptions::causal>("causal"),
      field<&GenOptions::mask>("mask"),
      field<&GenOptions::features>("features"),
      field<&GenOptions::required>("required"),
      field<&GenOptions::explicit_scale>("explicit_scale"),
      field<&GenOptions::families>("families"),
      field<&GenOptions::size_factor>("size_factor"),
      field<&GenOptions::domains>("domains"),
      field<&GenOptions::head_dims>("head_dims"),
      field<&GenOptions::kernel_head_dim_chance>("kernel_head_dim_chance"),
      field<&GenOptions::q_len_multiple>("q_len_multiple"),
      field<&GenOptions::kv_len_multiple>("kv_len_multiple"),
      field<&GenOptions::kv_formats>("kv_formats"),
      field<&GenOptions::numerics>("numerics"),
      field<&GenOptions::report_shape_chance>("report_shape_chance"),
      field<&GenOptions::max_report_head_dim>("max_report_head_dim"),
      field<&GenOptions::max_case_work>("max_case_work"),
      field<&GenOptions::case_calls>("case_calls"),
  };
};
static_assert(fields_complete<GenOptions>(), "a member of GenOptions is missing from its field list");

}  // namespace attncheck
