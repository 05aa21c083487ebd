#include "casefile/case_hash.h"

#include <bit>
#include <cmath>
#include <cstdio>

#include "casefile/case_json_v2.h"
#include "problem/fnv1a.h"

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

}  // namespace

uint64_t case_content_hash(const CaseRecord& rec) {
  const Problem& p = rec.problem;
  CaseHash f;
  f.str(rec.law);
  f.i64(static_cast<int64_t>(p.dtype));
  for (int64_t e : {p.shape.batch, p.shape.heads, p.shape.q_len, p.shape.kv_len, p.shape.head_dim,
                    p.shape.value_dim})
    f.i64(e);
  f.i64(static_cast<int64_t>(p.causal));
  f.real(p.scale);
  for (const auto* t : {&p.q, &p.k, &p.v}) {
    f.u64(t->size());
    for (double x : *t) f.real(x);
  }
  f.u64(p.mask.size());
  for (uint8_t m : p.mask) {
    const unsigned char b = m ? 1 : 0;
    f.bytes(&b, 1);
  }
  // The fields of schema 2, only for a problem that needs it: the hash (and
  // so the file name) of every v1 case stays what it was.
  if (needs_schema_2(p)) {
    f.u64(2);
    f.i64(p.shape.kv_head_count());
    auto broadcast = [&f](const Broadcast& b) { f.u64((b.per_batch ? 1u : 0u) | (b.per_head ? 2u : 0u) | (b.per_row ? 4u : 0u)); };
    broadcast(p.mask_broadcast);
    broadcast(p.bias_broadcast);
    for (const auto* t : {&p.bias, &p.alibi_slopes, &p.sinks}) {
      f.u64(t->size());
      for (double x : *t) f.real(x);
    }
    for (const auto* lens : {&p.q_lens, &p.kv_lens}) {
      f.u64(lens->size());
      for (int32_t n : *lens) f.i64(n);
    }
    f.i64(p.window_left);
    f.i64(p.window_right);
    f.real(p.softcap);
    f.u64(p.lse_requested ? 1 : 0);
    for (const TensorLayout* l : {&p.layouts.q, &p.layouts.k, &p.layouts.v, &p.layouts.out}) {
      for (uint8_t a : l->order) f.u64(a);
      for (int64_t g : l->gap) f.i64(g);
    }
    // A backward problem's own fields, only for one: every forward case keeps its hash.
    if (p.is_backward()) {
      f.u64(kBackwardFeature);  // the gradient fields follow
      f.u64(p.dout.size());
      for (double x : p.dout) f.real(x);
      for (const TensorLayout* l : {&p.layouts.dout, &p.layouts.dq, &p.layouts.dk, &p.layouts.dv}) {
        for (uint8_t a : l->order) f.u64(a);
        for (int64_t g : l->gap) f.i64(g);
      }
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
