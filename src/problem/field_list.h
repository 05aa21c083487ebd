// The machinery of a record's field list: one list per record (Problem,
// GenOptions, ... in problem_fields.h, gen_options_fields.h), from which every
// serialisation, hash, memo key and comparison of the record is derived, so
// that a new member is one line in its list and a member left out of the list
// is a compile error (the static_assert beside each list compares the list's
// length with the record's member count, counted by member_count<T>()).
//
// A list is a specialisation of FieldsOf<T> with a constexpr tuple `list` of
// Field<&T::member, Attrs>: the member (a compile-time member pointer, so a
// visit compiles to what a hand-written line would), its stable name (a case
// file's key) and attributes the record's consumers define.
//
// Example usage:
//   template <> struct FieldsOf<Broadcast> {
//     static constexpr auto list = std::tuple{field<&Broadcast::per_batch>("per_batch"), ...};
//   };
//   static_assert(fields_complete<Broadcast>());
//   for_each_field<Broadcast>([](auto f, const auto& x) { ... f.name ... x ... }, b);
//   for_each_field<Broadcast>([](auto f, const auto& x, const auto& y) { ... }, a, b);  // two at once
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace attncheck {

// One field of a record S: the member M (a pointer to member of S) and its
// attributes A (an aggregate each list defines for itself).
template <auto M, class A>
struct Field {
  static constexpr auto member = M;
  const char* name;
  A attrs;
};

template <auto M, class A>
constexpr Field<M, A> field(const char* name, A attrs) {
  return {name, attrs};
}

// A field without attributes.
struct NoAttrs {};
template <auto M>
constexpr Field<M, NoAttrs> field(const char* name) {
  return {name, {}};
}

// Specialised, with a constexpr tuple `list`, for each record that has a list.
template <class T>
struct FieldsOf;

template <class T>
concept HasFields = requires { FieldsOf<std::remove_cv_t<T>>::list; };

// f(field, records.*field.member...) for each field in list order; records
// are objects of T (const or not), visited side by side.
template <class T, class F, class... R>
constexpr void for_each_field(F&& f, R&... records) {
  const auto one = [&](const auto& fd) { f(fd, (records.*std::remove_cvref_t<decltype(fd)>::member)...); };
  std::apply([&](const auto&... fs) { (one(fs), ...); }, FieldsOf<T>::list);
}

// T is a std::vector (a list of variable length, which formats write as its
// length and its elements).
template <class T>
constexpr bool is_vector = false;
template <class T, class A>
constexpr bool is_vector<std::vector<T, A>> = true;

// M and N are the same member (false when their types differ).
template <auto M, auto N>
constexpr bool same_member() {
  if constexpr (std::is_same_v<decltype(M), decltype(N)>) return M == N;
  else return false;
}

namespace field_list_detail {

// Converts to anything: T{AnyMember{}, ...} compiles for as many
// initialisers as T has members and no more. Every member here is a class,
// a scalar or a pointer, to which AnyMember converts in one step, so brace
// elision never splits one member over several initialisers (a member that
// is a C array would: a record with one has no list).
struct AnyMember {
  template <class T>
  operator T() const;  // declared only: used in unevaluated contexts
};

template <class T, std::size_t... I>
constexpr bool initialisable_with(std::index_sequence<I...>) {
  return requires { T{(static_cast<void>(I), AnyMember{})...}; };
}

template <class T, std::size_t N>
constexpr std::size_t count_from() {
  if constexpr (N > 64) return N;  // a record this large would need a deeper search
  else if constexpr (initialisable_with<T>(std::make_index_sequence<N + 1>{})) return count_from<T, N + 1>();
  else return N;
}

}  // namespace field_list_detail

// The number of members of the aggregate T.
template <class T>
constexpr std::size_t member_count() {
  static_assert(std::is_aggregate_v<T>, "member_count counts an aggregate's members");
  return field_list_detail::count_from<T, 0>();
}

// T's list names as many fields as T has members (write it as a
// static_assert beside the list: a member added to T and not to the list
// fails to compile there).
template <class T>
constexpr bool fields_complete() {
  return std::tuple_size_v<decltype(FieldsOf<T>::list)> == member_count<T>();
}

}  // namespace attncheck
