// An ABI v2 or v3 call as it travels from the parent to a plugin's host child:
// the scalars as they are, every pointer as its offset in the shared region
// plus one (0: NULL), so the child rebases it onto its own mapping. Plain data
// of fixed size, part of host::CallRequest (host_protocol.h).
//
// A backward call's gradient views (attncheck_grad) travel the same way.
//
// All are written from the field lists of attncheck_call_v2, attncheck_call_v3
// and attncheck_grad below (problem/field_list.h): a member the ABI gains and
// the list lacks is a compile error at the list's static_assert, and a member in
// the list travels without another line here. Each member takes whole 64-bit
// words of the wire: a scalar or a pointer one, a view five (data, stride[4]),
// a scale four (data, stride[3]), a record with a list (v3's `v2`) its own words.
//
// Example usage:
//   parent: req.v2 = to_wire(abi_call_v2(p, layout, region.data()), region.data());
//           req.grad = to_wire(abi_grad(p, layout, region.data()), region.data());
//   child:  const attncheck_call_v2 call = from_wire(req.v2, base);
//           const attncheck_grad grad = from_wire(req.grad, base);
//   v3:     req.v3 = to_wire(neutral_call_v3(abi_call_v2(...)), region.data());
#pragma once

#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "attncheck/plugin_v3.h"
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
struct FieldsOf<attncheck_call_v3> {
  static constexpr auto list = std::tuple{
      field<&attncheck_call_v3::v2>("v2"),
      field<&attncheck_call_v3::cu_seqlens_q>("cu_seqlens_q"),
      field<&attncheck_call_v3::cu_seqlens_k>("cu_seqlens_k"),
      field<&attncheck_call_v3::total_q>("total_q"),
      field<&attncheck_call_v3::total_k>("total_k"),
      field<&attncheck_call_v3::block_table>("block_table"),
      field<&attncheck_call_v3::max_pages_per_seq>("max_pages_per_seq"),
      field<&attncheck_call_v3::num_pages>("num_pages"),
      field<&attncheck_call_v3::page_size>("page_size"),
      field<&attncheck_call_v3::k_format>("k_format"),
      field<&attncheck_call_v3::v_format>("v_format"),
      field<&attncheck_call_v3::k_scale>("k_scale"),
      field<&attncheck_call_v3::v_scale>("v_scale"),
      field<&attncheck_call_v3::alibi_batch_stride>("alibi_batch_stride"),
  };
};
static_assert(fields_complete<attncheck_call_v3>(), "a member of attncheck_call_v3 is missing from its field list");

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

template <class S>
constexpr std::size_t words();

// 64-bit words a member of type T takes on the wire.
template <class T>
constexpr std::size_t words_of() {
  if constexpr (is_view<T>) {
    return 1 + 4;
  } else if constexpr (std::is_same_v<T, attncheck_scale>) {
    return 1 + 3;
  } else if constexpr (HasFields<T>) {
    return words<T>();
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
using WireCallV3 = Wire<attncheck_call_v3>;
using WireGrad = Wire<attncheck_grad>;

inline uint64_t wire_offset(const void* p, const uint8_t* base) {
  return p ? static_cast<uint64_t>(static_cast<const uint8_t*>(p) - base) + 1 : 0;
}

template <class T>
inline T* rebased(uint64_t offset, uint8_t* base) {
  return offset ? reinterpret_cast<T*>(base + (offset - 1)) : nullptr;
}

namespace wire_detail {

// Writes the record c's words from `at` on (advancing it).
template <class S>
inline void put_words(const S& c, uint64_t*& at, const uint8_t* base) {
  for_each_field<S>(
      [&](const auto&, const auto& m) {
        using T = std::remove_cvref_t<decltype(m)>;
        if constexpr (is_view<T>) {
          *at++ = wire_offset(m.data, base);
          for (int a = 0; a < 4; ++a) *at++ = static_cast<uint64_t>(m.stride[a]);
        } else if constexpr (std::is_same_v<T, attncheck_scale>) {
          *at++ = wire_offset(m.data, base);
          for (int a = 0; a < 3; ++a) *at++ = static_cast<uint64_t>(m.stride[a]);
        } else if constexpr (HasFields<T>) {
          put_words(m, at, base);
        } else if constexpr (std::is_pointer_v<T>) {
          *at++ = wire_offset(m, base);
        } else {
          std::memcpy(at++, &m, sizeof m);  // the scalar's bits, the rest of its word 0
        }
      },
      c);
}

// Reads the record c's words from `at` on (advancing it).
template <class S>
inline void get_words(S& c, const uint64_t*& at, uint8_t* base) {
  for_each_field<S>(
      [&](const auto&, auto& m) {
        using T = std::remove_cvref_t<decltype(m)>;
        if constexpr (is_view<T> || std::is_same_v<T, attncheck_scale>) {
          m.data = rebased<std::remove_pointer_t<decltype(m.data)>>(*at++, base);
          for (auto& stride : m.stride) stride = static_cast<int64_t>(*at++);
        } else if constexpr (HasFields<T>) {
          get_words(m, at, base);
        } else if constexpr (std::is_pointer_v<T>) {
          m = rebased<std::remove_pointer_t<T>>(*at++, base);
        } else {
          std::memcpy(&m, at++, sizeof m);
        }
      },
      c);
}

}  // namespace wire_detail

template <class S>
inline Wire<S> to_wire(const S& c, const uint8_t* base) {
  Wire<S> w;
  uint64_t* at = w.word;
  wire_detail::put_words(c, at, base);
  return w;
}

template <class S>
inline S from_wire(const Wire<S>& w, uint8_t* base) {
  S c{};
  const uint64_t* at = w.word;
  wire_detail::get_words(c, at, base);
  return c;
}

// The version-3 call of this slice: version 2's call with every field version
// 3 adds at its neutral value (docs/abi/plugin-abi-v3.md: "A call whose added
// fields are all neutral is a version-2 call"). NULL pointers point into no
// byte of the region, so nothing of them needs a guard.
inline attncheck_call_v3 neutral_call_v3(const attncheck_call_v2& v2) {
  attncheck_call_v3 c{};
  c.v2 = v2;
  c.cu_seqlens_q = c.cu_seqlens_k = nullptr;
  c.total_q = c.total_k = 0;
  c.block_table = nullptr;
  c.max_pages_per_seq = c.num_pages = c.page_size = 0;
  c.k_format = c.v_format = ATTNCHECK_KV_DTYPE;
  c.k_scale = attncheck_scale{nullptr, {0, 0, 0}};
  c.v_scale = attncheck_scale{nullptr, {0, 0, 0}};
  c.alibi_batch_stride = 0;
  return c;
}

}  // namespace host
}  // namespace attncheck
