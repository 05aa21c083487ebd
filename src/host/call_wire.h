// An ABI v2 call as it travels from the parent to a plugin's host child: the
// scalars as they are, every pointer as its offset in the shared region plus
// one (0: NULL), so the child rebases it onto its own mapping. Plain data of
// fixed size, part of host::CallRequest (host_protocol.h).
//
// A backward call's gradient views (attncheck_grad) travel the same way.
//
// Both are written from the field lists of attncheck_call_v2 and
// attncheck_grad below (problem/field_list.h): a member the ABI gains and the
// list lacks is a compile error at the list's static_assert, and a member in
// the list travels without another line here. Each member takes whole 64-bit
// words of the wire: a scalar or a pointer one, a view five (data, stride[4]).
//
// Example usage:
//   parent: req.v2 = to_wire(abi_call_v2(p, layout, region.data()), region.data());
//           req.grad = to_wire(abi_grad(p, layout, region.data()), region.data());
//   child:  const attncheck_call_v2 call = from_wire(req.v2, base);
//           const attncheck_grad grad = from_wire(req.grad, base);
#pragma once

#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "attncheck/plugin_v2.h"
#include "problem/field_list.h"

namespace attncheck {

template <>
struct FieldsOf<attncheck_call_v2> {
  static constexpr auto list = std::tuple{
      field<&attncheck_call_v2::dtype>("dtype"),
      field<&attncheck_call_v2::batch>("batch"),
      field<&attncheck_call_v2::heads>("heads"),
      field<&attncheck_call_v2::kv_heads>("kv_heads"),
      field<&attncheck_call_v2::q_len>("q_len"),
      field<&attncheck_call_v2::kv_len>("kv_len"),
      field<&attncheck_call_v2::head_dim>("head_dim"),
      field<&attncheck_call_v2::value_dim>("value_dim"),
      field<&attncheck_call_v2::q>("q"),
      field<&attncheck_call_v2::k>("k"),
      field<&attncheck_call_v2::v>("v"),
      field<&attncheck_call_v2::out>("out"),
      field<&attncheck_call_v2::lse>("lse"),
      field<&attncheck_call_v2::q_lens>("q_lens"),
      field<&attncheck_call_v2::kv_lens>("kv_lens"),
      field<&attncheck_call_v2::causal>("causal"),
      field<&attncheck_call_v2::window_left>("window_left"),
      field<&attncheck_call_v2::window_right>("window_right"),
      field<&attncheck_call_v2::scale>("scale"),
      field<&attncheck_call_v2::softcap>("softcap"),
      field<&attncheck_call_v2::mask>("mask"),
      field<&attncheck_call_v2::bias>("bias"),
      field<&attncheck_call_v2::alibi_slopes>("alibi_slopes"),
      field<&attncheck_call_v2::sinks>("sinks"),
  };
};
static_assert(fields_complete<attncheck_call_v2>(), "a member of attncheck_call_v2 is missing from its field list");

template <>
struct FieldsOf<attncheck_grad> {
  static constexpr auto list = std::tuple{
      field<&attncheck_grad::dout>("dout"),
      field<&attncheck_grad::dq>("dq"),
      field<&attncheck_grad::dk>("dk"),
      field<&attncheck_grad::dv>("dv"),
  };
};
static_assert(fields_complete<attncheck_grad>(), "a member of attncheck_grad is missing from its field list");

namespace host {

namespace wire_detail {

template <class T>
constexpr bool is_view = std::is_same_v<T, attncheck_view> || std::is_same_v<T, attncheck_out_view>;

// 64-bit words a member of type T takes on the wire.
template <class T>
constexpr std::size_t words_of() {
  if constexpr (is_view<T>) {
    return 1 + 4;
  } else {
    static_assert(std::is_pointer_v<T> || std::is_arithmetic_v<T> || std::is_enum_v<T>,
                  "a new kind of ABI member: say how it travels");
    static_assert(sizeof(T) <= sizeof(uint64_t));
    return 1;
  }
}

template <class S>
constexpr std::size_t words() {
  S s{};
  std::size_t n = 0;
  for_each_field<S>([&](const auto&, const auto& m) { n += words_of<std::remove_cvref_t<decltype(m)>>(); }, s);
  return n;
}

}  // namespace wire_detail

// The words of one ABI record S, in its list's order.
template <class S>
struct Wire {
  uint64_t word[wire_detail::words<S>()] = {};
};
using WireCallV2 = Wire<attncheck_call_v2>;
using WireGrad = Wire<attncheck_grad>;

inline uint64_t wire_offset(const void* p, const uint8_t* base) {
  return p ? static_cast<uint64_t>(static_cast<const uint8_t*>(p) - base) + 1 : 0;
}

template <class T>
inline T* rebased(uint64_t offset, uint8_t* base) {
  return offset ? reinterpret_cast<T*>(base + (offset - 1)) : nullptr;
}

template <class S>
inline Wire<S> to_wire(const S& c, const uint8_t* base) {
  Wire<S> w;
  uint64_t* at = w.word;
  for_each_field<S>(
      [&](const auto&, const auto& m) {
        using T = std::remove_cvref_t<decltype(m)>;
        if constexpr (wire_detail::is_view<T>) {
          *at++ = wire_offset(m.data, base);
          for (int a = 0; a < 4; ++a) *at++ = static_cast<uint64_t>(m.stride[a]);
        } else if constexpr (std::is_pointer_v<T>) {
          *at++ = wire_offset(m, base);
        } else {
          std::memcpy(at++, &m, sizeof m);  // the scalar's bits, the rest of its word 0
        }
      },
      c);
  return w;
}

template <class S>
inline S from_wire(const Wire<S>& w, uint8_t* base) {
  S c{};
  const uint64_t* at = w.word;
  for_each_field<S>(
      [&](const auto&, auto& m) {
        using T = std::remove_cvref_t<decltype(m)>;
        if constexpr (wire_detail::is_view<T>) {
          m.data = rebased<std::remove_pointer_t<decltype(m.data)>>(*at++, base);
          for (int a = 0; a < 4; ++a) m.stride[a] = static_cast<int64_t>(*at++);
        } else if constexpr (std::is_pointer_v<T>) {
          m = rebased<std::remove_pointer_t<T>>(*at++, base);
        } else {
          std::memcpy(&m, at++, sizeof m);
        }
      },
      c);
  return c;
}

}  // namespace host
}  // namespace attncheck
