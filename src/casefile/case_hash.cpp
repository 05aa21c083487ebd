#include "casefile/case_hash.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <type_traits>

#include "casefile/case_json_v2.h"
#include "problem/fnv1a.h"
#include "problem/problem_fields.h"

namespace attncheck {
namespace {

// A case's fields fed to FNV-1a in a fixed, machine-independent order.
struct CaseHash : Fnv1a {
  void i64(int64_t x) { u64(static_cast<uint64_t>(x)); }
  // The text of a string and its length, so "ab"+"c" differs from "a"+"bc".
  void str(const std::string& s) { u64(s.size()); bytes(s.data(), s.size()); }
  void real(double x) {
    if (std::isnan(x)) x = std::signbit(x) ? -std::nan("") : std::nan("");
    u64(std::bit_cast<uint64_t>(x));
  }
};

// One value as the hash has always fed it: integers, enums and flags as 64
// bits, doubles by their bits (NaN by its sign), a list as its length and its
// elements (a mask's as bytes 0/1), a Broadcast as three bits, a layout as its
// order and its gaps.
void feed(CaseHash& f, const auto& x) {
  using T = std::remove_cvref_t<decltype(x)>;
  if constexpr (std::is_same_v<T, double>) {
    f.real(x);
  } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
    f.u64(x.size());
    for (uint8_t m : x) {
      const unsigned char b = m ? 1 : 0;
      f.bytes(&b, 1);
    }
  } else if constexpr (is_vector<T>) {
    f.u64(x.size());
    for (const auto& e : x) feed(f, e);
  } else if constexpr (std::is_same_v<T, bool>) {
    f.u64(x ? 1 : 0);
  } else if constexpr (std::is_same_v<T, Broadcast>) {
    uint64_t bits = 0, bit = 1;
    for_each_field<Broadcast>([&](const auto&, bool flag) { bits |= flag ? bit : 0; bit <<= 1; }, x);
    f.u64(bits);
  } else if constexpr (std::is_same_v<T, TensorLayout>) {
    for_each_field<TensorLayout>([&](const auto&, const auto& axes) { for (auto a : axes) f.i64(a); }, x);
  } else {
    static_assert(std::is_integral_v<T> || std::is_enum_v<T>, "a new kind of field: say how the case hash feeds it");
    f.i64(static_cast<int64_t>(x));
  }
}

// The leaves of `since` (problem/problem_fields.h), in the order of their `hash` places.
void feed_fields(CaseHash& f, const Problem& p, Since since) {
  constexpr int places = std::tuple_size_v<decltype(FieldsOf<Problem>::list)>;
  for (int place = 0; place < places; ++place)
    for_each_leaf<Problem>(
        [&](const auto& field, const auto& x) {
          if (field.attrs.hash == place && field.attrs.since == since) feed(f, x);
        },
        p);
}

}  // namespace

uint64_t case_content_hash(const CaseRecord& rec) {
  const Problem& p = rec.problem;
  CaseHash f;
  f.str(rec.law);
  feed_fields(f, p, Since::v1);
  // The fields of schema 2, only for a problem that needs it: the hash (and
  // so the file name) of every v1 case stays what it was.
  if (needs_schema_2(p)) {
    f.u64(2);
    feed_fields(f, p, Since::v2);
    // A backward problem's own fields, only for one: every forward case keeps its hash.
    if (p.is_backward()) {
      f.u64(kBackwardFeature);  // the gradient fields follow
      feed_fields(f, p, Since::backward);
    }
    // A packed problem's own fields (ABI v3), only for one: every other case keeps its hash.
    if (p.packed()) {
      f.u64(kPackedFeature);
      feed_fields(f, p, Since::packed);
    }
    // A paged problem's own fields (ABI v3), only for one, likewise.
    if (p.paged()) {
      f.u64(kPagedFeature);
      feed_fields(f, p, Since::paged);
    }
    // A problem's stored K and V formats (ABI v3), only for one, likewise.
    if (p.kv_formatted()) {
      f.u64(kKvFormatsFeature);
      feed_fields(f, p, Since::kv_formats);
    }
    // ALiBi slopes per (batch, head) (ABI v3), only for such a problem, likewise.
    if (p.alibi_per_batch()) {
      f.u64(kAlibiBatchFeature);
      feed_fields(f, p, Since::alibi_batch);
    }
    // V as a view of K (ABI v3, MLA), only for such a problem, likewise.
    if (p.v_view_of_k) {
      f.u64(kVViewFeature);
      feed_fields(f, p, Since::v_view);
    }
    // K or V expanded (ABI v3's BROADCAST_KV), only for such a problem, likewise.
    if (p.kv_broadcast()) {
      f.u64(kBroadcastKvFeature);
      feed_fields(f, p, Since::broadcast_kv);
    }
    // The declared numerics that apply (ABI v3), only for a problem with some,
    // likewise: 2^32 marks them (above every feature bit).
    if (p.numerics != 0) {
      f.u64(uint64_t{1} << 32);
      feed_fields(f, p, Since::numerics);
    }
  }
  return f.value;
}

std::string case_file_name(const CaseRecord& rec) {
  std::string law = rec.law.empty() ? std::string("case") : rec.law;
  for (char& c : law) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) c = '_';
  }
  if (law.size() > 100) law.resize(100);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(case_content_hash(rec)));
  return law + "-" + hex + ".json";
}

}  // namespace attncheck
