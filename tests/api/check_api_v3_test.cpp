// attncheck::check on ABI version 3 callables (include/attncheck/attncheck.hpp):
// a callable taking const attncheck_call_v3* gets version 3's fields, declares
// PACKED and the promises in Options, and is judged by the packed and promised
// laws like a v3 plugin. The callables forward to the built-ins (reference's v3
// entry computes packed calls exactly), so the verdicts are known; the faulty
// ones add one realistic fault on top.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>

#include "attncheck/attncheck.hpp"
#include "impls/builtins.h"

namespace {

using attncheck::find_builtin;

constexpr uint32_t kV2Features = (1u << 11) - 1;  // every ABI v2 feature bit
const std::vector<std::string> kPackedLaws = {"packed_equals_padded", "slack_inert_and_untouched", "empty_sequences",
                                             "sequence_order", "bounds_inert"};

attncheck::Options v3_options(std::vector<std::string> laws, uint32_t features, uint32_t promises = 0) {
  attncheck::Options o;
  o.laws = std::move(laws);
  o.cases = 40;
  o.min_judged = 10;
  o.seed = 20261130;
  o.features = features;
  o.promises = promises;
  o.shrink_seconds = 2;
  return o;
}

// reference's v3 entry, counting the packed calls it gets (the state is shared:
// the checker copies the functor).
struct PackedReference {
  std::shared_ptr<int> packed_q, packed_k;
  int operator()(const attncheck_call_v3* c, char* err, size_t n) {
    *packed_q += c->cu_seqlens_q != nullptr;
    *packed_k += c->cu_seqlens_k != nullptr;
    return find_builtin("reference")->forward_v3(c, err, n);
  }
};

// Stores NaN at element `at` of a tensor of the call's dtype.
void store_nan(attncheck_dtype t, void* data, int64_t at) {
  switch (t) {
    case ATTNCHECK_F64: static_cast<double*>(data)[at] = std::nan(""); break;
    case ATTNCHECK_F32: static_cast<float*>(data)[at] = std::nanf(""); break;
    case ATTNCHECK_F16: static_cast<uint16_t*>(data)[at] = 0x7e00; break;
    case ATTNCHECK_BF16: static_cast<uint16_t*>(data)[at] = 0x7fc0; break;
  }
}

// A packed fault: reference, except that a sequence whose packed key slot is
// empty (cu_seqlens_k[b] == cu_seqlens_k[b+1]) divides 0 by 0 and writes NaN
// in its live out rows instead of zeros (FlashAttention#2568's class). Padded
// keys are right, so only the packed laws can see it. out row i of sequence b
// is at h*stride[1] + (cu_q[b] + i)*stride[2] when q is packed (stride[0] 0),
// b*stride[0] + h*stride[1] + i*stride[2] when padded.
int empty_packed_keys_nan(const attncheck_call_v3* c, char* err, size_t n) {
  const int rc = find_builtin("reference")->forward_v3(c, err, n);
  if (rc != ATTNCHECK_OK || !c->cu_seqlens_k) return rc;
  const attncheck_call_v2& v = c->v2;
  for (int64_t b = 0; b < v.batch; ++b) {
    if (c->cu_seqlens_k[b + 1] != c->cu_seqlens_k[b]) continue;
    const int64_t row0 = c->cu_seqlens_q ? c->cu_seqlens_q[b] : 0;
    const int64_t lq = v.q_lens ? v.q_lens[b] : c->cu_seqlens_q ? c->cu_seqlens_q[b + 1] - row0 : v.q_len;
    for (int64_t h = 0; h < v.heads; ++h)
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t col = 0; col < v.value_dim; ++col)
          store_nan(v.dtype, v.out.data, b * v.out.stride[0] + h * v.out.stride[1] + (row0 + i) * v.out.stride[2] + col);
  }
  return rc;
}

TEST(CheckApiV3, CorrectPackedCallablePassesThePackedLaws) {
  PackedReference ref{std::make_shared<int>(0), std::make_shared<int>(0)};
  const attncheck::Report r =
      attncheck::check(ref, v3_options(kPackedLaws, kV2Features | ATTNCHECK_FEATURE_PACKED));
  EXPECT_TRUE(r.passed()) << r.text();
  for (const std::string& law : kPackedLaws) {
    const attncheck::LawOutcome* l = r.law(law);
    ASSERT_NE(l, nullptr) << law;
    EXPECT_EQ(l->status, attncheck::Status::pass) << law << ": " << l->message;
    EXPECT_GE(l->judged, 10) << law;
  }
  // The v3 fields reach the callable: packed q and packed keys both arrived.
  EXPECT_GT(*ref.packed_q, 0);
  EXPECT_GT(*ref.packed_k, 0);
}

TEST(CheckApiV3, PackedFaultFailsEmptySequences) {
  attncheck::Options o = v3_options(kPackedLaws, kV2Features | ATTNCHECK_FEATURE_PACKED);
  o.cases = 100;  // a law stops at its first failure: as cheap as 40, less bound to where the draws put one
  const attncheck::Report r = attncheck::check(empty_packed_keys_nan, o);
  EXPECT_FALSE(r.passed()) << r.text();
  const attncheck::LawOutcome* l = r.law("empty_sequences");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->status, attncheck::Status::fail) << r.text();
  EXPECT_NE(l->failing_case.find("cu_seqlens_k"), std::string::npos) << l->failing_case;
}

// Without PACKED declared, a v3 callable gets no packed call: the packed laws
// are skipped (never passed), and every call's added fields are neutral.
TEST(CheckApiV3, UndeclaredPackedIsSkippedNotPassed) {
  PackedReference ref{std::make_shared<int>(0), std::make_shared<int>(0)};
  const attncheck::Report r = attncheck::check(ref, v3_options({"packed_equals_padded", "matches_oracle"}, kV2Features));
  EXPECT_TRUE(r.passed()) << r.text();
  EXPECT_EQ(r.law("packed_equals_padded")->status, attncheck::Status::skipped) << r.text();
  EXPECT_EQ(r.law("matches_oracle")->status, attncheck::Status::pass) << r.text();
  EXPECT_EQ(*ref.packed_q + *ref.packed_k, 0);
}

// A promise declared in Options is demanded bit for bit: reference keeps
// DETERMINISTIC; path_by_alignment (bits that follow out's alignment) breaks it.
TEST(CheckApiV3, PromisesAreHeldBitForBit) {
  const auto reference = [](const attncheck_call_v3* c, char* err, size_t n) {
    return find_builtin("reference")->forward_v3(c, err, n);
  };
  const auto by_alignment = [](const attncheck_call_v3* c, char* err, size_t n) {
    return find_builtin("path_by_alignment")->forward_v2(&c->v2, err, n);
  };
  const std::vector<std::string> law = {"rerun_bit_identical"};
  const attncheck::Report good = attncheck::check(reference, v3_options(law, kV2Features, ATTNCHECK_PROMISE_DETERMINISTIC));
  EXPECT_EQ(good.law(law[0])->status, attncheck::Status::pass) << good.text();
  EXPECT_GE(good.law(law[0])->judged, 10) << good.text();
  const attncheck::Report bad = attncheck::check(by_alignment, v3_options(law, kV2Features, ATTNCHECK_PROMISE_DETERMINISTIC));
  EXPECT_EQ(bad.law(law[0])->status, attncheck::Status::fail) << bad.text();
  const attncheck::Report none = attncheck::check(by_alignment, v3_options(law, kV2Features));
  EXPECT_EQ(none.law(law[0])->status, attncheck::Status::skipped) << none.text();
}

// A v3 backward (with_backward) gets the forward's attncheck_call_v3 and is
// judged by the gradient laws; DETERMINISTIC_BACKWARD is held to it.
TEST(CheckApiV3, BackwardTakesTheV3Call) {
  auto backward_calls = std::make_shared<int>(0);
  const auto fwd = [](const attncheck_call_v3* c, char* err, size_t n) {
    return find_builtin("reference")->forward_v3(c, err, n);
  };
  const auto bwd = [backward_calls](const attncheck_call_v3* c, const attncheck_grad* g, char* err, size_t n) {
    ++*backward_calls;
    return find_builtin("reference")->backward_v2(&c->v2, g, err, n);
  };
  attncheck::Options o = v3_options({"grad_matches_oracle", "backward_rerun_bit_identical"}, kV2Features,
                                    ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD);
  o.cases = 20;
  const attncheck::Report r = attncheck::check(attncheck::with_backward(fwd, bwd), o);
  EXPECT_TRUE(r.passed()) << r.text();
  EXPECT_EQ(r.law("grad_matches_oracle")->status, attncheck::Status::pass) << r.text();
  EXPECT_EQ(r.law("backward_rerun_bit_identical")->status, attncheck::Status::pass) << r.text();
  EXPECT_GT(*backward_calls, 0);
}

// BROADCAST_KV (the ABI's bit 16, the checker's backward bit inside) reaches the
// laws as broadcast K and V: reference's forward passes broadcast_equals_materialized.
TEST(CheckApiV3, BroadcastKvIsJudged) {
  const auto fwd = [](const attncheck_call_v3* c, char* err, size_t n) {
    return find_builtin("reference")->forward_v3(c, err, n);
  };
  const attncheck::Report r = attncheck::check(
      attncheck::make_callable(fwd), v3_options({"broadcast_equals_materialized"}, kV2Features | ATTNCHECK_FEATURE_BROADCAST_KV));
  EXPECT_TRUE(r.passed()) << r.text();
  const attncheck::LawOutcome* l = r.law("broadcast_equals_materialized");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->status, attncheck::Status::pass) << l->message;
  EXPECT_GE(l->judged, 10);
}

// What no law judges yet, and what the spec refuses, is a UsageError naming it.
// Stored K/V formats declared in Options::kv_formats reach the callable and are
// judged: reference's v3 entry passes quantized_matches_oracle on them (and gets
// calls in both formats), kv_scale_ignored's fails it.
TEST(CheckApiV3, DeclaredKvFormatsAreSentAndJudged) {
  constexpr uint32_t kInt8AndQ8 = (1u << ATTNCHECK_KV_INT8) | (1u << ATTNCHECK_KV_Q8_0);
  auto seen = std::make_shared<uint32_t>(0);
  const auto counting = [seen](const attncheck_call_v3* c, char* err, size_t n) {
    *seen |= (1u << c->k_format) | (1u << c->v_format);
    return find_builtin("reference")->forward_v3(c, err, n);
  };
  attncheck::Options o = v3_options({"quantized_matches_oracle", "matches_oracle"}, kV2Features | ATTNCHECK_FEATURE_KV_FORMATS);
  o.kv_formats = kInt8AndQ8;
  const attncheck::Report r = attncheck::check(counting, o);
  EXPECT_TRUE(r.passed()) << r.text();
  EXPECT_GE(r.law("quantized_matches_oracle")->judged, 10) << r.text();
  EXPECT_EQ(*seen & kInt8AndQ8, kInt8AndQ8);
  EXPECT_EQ(*seen & ~(kInt8AndQ8 | 1u), 0u) << "a format not offered was sent";

  const attncheck::Report bad = attncheck::check(
      [](const attncheck_call_v3* c, char* err, size_t n) { return find_builtin("kv_scale_ignored")->forward_v3(c, err, n); },
      o);
  EXPECT_EQ(bad.law("quantized_matches_oracle")->status, attncheck::Status::fail) << bad.text();
}

TEST(CheckApiV3, DeclarationsThatCannotBeJudgedAreUsageErrors) {
  const auto fwd = [](const attncheck_call_v3* c, char* err, size_t n) {
    return find_builtin("reference")->forward_v3(c, err, n);
  };
  const auto words_of = [&](const attncheck::Callable& c, const attncheck::Options& o) -> std::string {
    try {
      attncheck::check(c, o);
    } catch (const attncheck::UsageError& e) {
      return e.what();
    }
    return "(no error)";
  };
  const attncheck::Callable v3 = attncheck::make_callable(fwd);
  // Every version-3 feature is judged now (BROADCAST_KV last, by broadcast_equals_materialized:
  // CheckApiV3.BroadcastKvIsJudged); a bit no feature names is refused.
  EXPECT_NE(words_of(v3, v3_options({"matches_oracle"}, kV2Features | (1u << 17))).find("no ATTNCHECK_FEATURE_* of ABI version 3 names"),
            std::string::npos);
  EXPECT_NE(words_of(v3, v3_options({"matches_oracle"}, kV2Features, ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD))
                .find("Options declares promises 0x2 with ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD, and its backward is NULL"),
            std::string::npos);
  EXPECT_NE(words_of(v3, v3_options({"matches_oracle"}, kV2Features, 1u << 5)).find("no ATTNCHECK_PROMISE_* names"),
            std::string::npos);
  const auto v2 = [](const attncheck_call_v2* c, char* err, size_t n) {
    return find_builtin("reference")->forward_v2(c, err, n);
  };
  const attncheck::Callable two = attncheck::make_callable(v2);
  EXPECT_NE(words_of(two, v3_options({"matches_oracle"}, kV2Features, ATTNCHECK_PROMISE_DETERMINISTIC))
                .find("Options::promises is for a v3 callable"),
            std::string::npos);
  EXPECT_NE(words_of(two, v3_options({"matches_oracle"}, kV2Features | ATTNCHECK_FEATURE_PACKED))
                .find("take const attncheck_call_v3*"),
            std::string::npos);
  attncheck::Options formats = v3_options({"matches_oracle"}, kV2Features);
  formats.kv_formats = 1u << ATTNCHECK_KV_INT8;
  EXPECT_NE(words_of(two, formats).find("Options::kv_formats is for a v3 callable"), std::string::npos);
  EXPECT_NE(words_of(v3, formats).find("kv_formats 0x20 without ATTNCHECK_FEATURE_KV_FORMATS"), std::string::npos)
      << words_of(v3, formats);
  formats.features |= ATTNCHECK_FEATURE_KV_FORMATS;
  formats.kv_formats = 0;
  EXPECT_NE(words_of(v3, formats).find("ATTNCHECK_FEATURE_KV_FORMATS with kv_formats 0x0"), std::string::npos)
      << words_of(v3, formats);
}

}  // namespace
