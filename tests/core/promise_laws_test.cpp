// ABI version 3's promises (docs/abi/plugin-abi-v3.md, "Promises") reach the
// laws and are judged bit for bit: an implementation's promises() (a
// built-in's row), buffers moved by shift_buffers, the promise laws skipped
// without the promise and passed by the references that make it, and each
// law failing a kernel that makes the promise and breaks it in the last bits
// only (its path chosen by an address, by the batch, by kv_len; padding
// multiplied by zero), which no law judging within the bound can see.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "driver/law_run.h"
#include "impls/builtins.h"
#include "impls/in_process.h"
#include "impls/kernels.h"
#include "law_framework/law.h"

namespace attncheck {
namespace {

constexpr uint32_t kAllPromises =
    ATTNCHECK_PROMISE_DETERMINISTIC | ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD | ATTNCHECK_PROMISE_BATCH_INVARIANT;

const Law& law_named(const char* name) {
  const Law* l = find_law(name);
  EXPECT_NE(l, nullptr) << name;
  return *l;
}

RunOptions promise_options(uint64_t seed, int cases = 30) {
  RunOptions o;
  o.seed = seed;
  o.cases = cases;
  o.min_judged = 10;
  o.gen.dtypes = {DType::f32};
  return o;
}

// A v2 kernel making `promises`, whose forward is `forward` (the last bits of
// naive and online differ on most cases: two orders of the same sums).
std::unique_ptr<InProcessImplementation> kernel(const char* name, ForwardV2Call forward, uint32_t promises,
                                                BackwardV2Call backward = nullptr) {
  auto impl = std::make_unique<InProcessImplementation>(name, std::move(forward), kAllFeatures, std::move(backward));
  impl->set_promises(promises);
  return impl;
}

TEST(Promises, BuiltinRowsReachTheirImplementation) {
  for (const char* name : {"reference", "naive", "online"}) EXPECT_EQ(make_builtin(name)->promises(), kAllPromises) << name;
  EXPECT_EQ(make_builtin("nondeterministic_order")->promises(), 0u);
  EXPECT_EQ(make_builtin("grad_dk_race_order")->promises(), 0u);
}

// The call's buffers move by exactly the shift, and the result does not.
TEST(Promises, ShiftedBuffersMoveEveryPointer) {
  uintptr_t q = 0, out = 0;
  auto impl = kernel(
      "where", [&](const attncheck_call_v2* c, char* err, size_t n) {
        q = reinterpret_cast<uintptr_t>(c->q.data), out = reinterpret_cast<uintptr_t>(c->out.data);
        return naive_forward_v2(c, err, n);
      }, 0);
  Problem p = make_problem(DType::f32, Shape{1, 2, 3, 4, 5, 5});
  for (std::size_t i = 0; i < p.q.size(); ++i) p.q[i] = 0.25 * static_cast<double>(i % 7);
  for (std::size_t i = 0; i < p.v.size(); ++i) p.v[i] = static_cast<double>(i);
  ASSERT_TRUE(impl->shift_buffers(4096));  // the region grows once, here: it keeps its place below
  impl->run(p);
  ASSERT_TRUE(impl->shift_buffers(0));
  const Outcome first = impl->run(p);
  const uintptr_t q0 = q, out0 = out;
  ASSERT_TRUE(impl->shift_buffers(192));
  const Outcome second = impl->run(p);
  EXPECT_EQ(q - q0, 192u);
  EXPECT_EQ(out - out0, 192u);
  EXPECT_EQ(first.out, second.out);
  EXPECT_FALSE(impl->shift_buffers(100));
}

TEST(PromisedLaws, SkippedWithTheReasonWithoutThePromise) {
  for (const char* name : {"rerun_bit_identical", "batch_invariance"}) {
    auto impl = kernel("no-promise", naive_forward_v2, ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD);
    const LawReport r = run_law(law_named(name), *impl, promise_options(7));
    EXPECT_EQ(r.status, LawStatus::skipped) << name;
    EXPECT_NE(r.message.find("which no-promise does not declare (attncheck_impl_v3::promises)"), std::string::npos) << r.message;
  }
}

TEST(PromisedLaws, TheReferencesKeepTheirPromises) {
  for (const char* name : {"reference", "naive", "online"})
    for (const char* law : {"rerun_bit_identical", "backward_rerun_bit_identical",
                            "batch_invariance", "batch_composition_independence"}) {
      auto impl = make_builtin(name);
      RunOptions o = promise_options(20261207, 20);
      o.gen.dtypes = {DType::f32, DType::bf16};
      const LawReport r = run_law(law_named(law), *impl, o);
      EXPECT_EQ(r.status, LawStatus::pass) << name << " " << law << ": " << r.message;
      EXPECT_GE(r.judged, 10) << name << " " << law;
    }
}

// The forward path chosen by out's alignment to 128 bytes: repeatable in
// place (deterministic passes), not where the buffers move.
TEST(PromisedLaws, ForwardCatchesAPathChosenByTheAddress) {
  auto impl = kernel(
      "by-address", [](const attncheck_call_v2* c, char* err, size_t n) {
        return (reinterpret_cast<uintptr_t>(c->out.data) & 64) ? online_forward_v2(c, err, n)
                                                                 : naive_forward_v2(c, err, n);
      }, ATTNCHECK_PROMISE_DETERMINISTIC);
  const LawReport r = run_law(law_named("rerun_bit_identical"), *impl, promise_options(11));
  ASSERT_EQ(r.status, LawStatus::fail) << r.message;
  EXPECT_NE(r.message.find("bytes further"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("ATTNCHECK_PROMISE_DETERMINISTIC promises every bit"), std::string::npos) << r.message;
  EXPECT_EQ(run_law(law_named("deterministic"), *impl, promise_options(11)).status, LawStatus::pass);
}

// A padding key multiplied by zero and added: 0 * 1e30 is 0, 0 * NaN is not.
TEST(PromisedLaws, ForwardCatchesPaddingTimesZero) {
  auto impl = kernel(
      "padding-times-zero", [](const attncheck_call_v2* c, char* err, size_t n) {
        const int rc = naive_forward_v2(c, err, n);
        if (rc != ATTNCHECK_OK || !c->kv_lens || c->kv_lens[0] >= c->kv_len || c->kv_lens[0] < 0 || c->q_len < 1)
          return rc;
        if (c->q_lens && c->q_lens[0] < 1) return rc;
        const float dead = static_cast<const float*>(c->k.data)[c->kv_lens[0] * c->k.stride[2]];
        static_cast<float*>(c->out.data)[0] += 0.0f * dead;
        return rc;
      }, ATTNCHECK_PROMISE_DETERMINISTIC);
  RunOptions o = promise_options(12, 60);
  const LawReport r = run_law(law_named("rerun_bit_identical"), *impl, o);
  ASSERT_EQ(r.status, LawStatus::fail) << r.message;
  EXPECT_NE(r.message.find("padding rows and keys changed"), std::string::npos) << r.message;
}

// A backward whose dk and dv come from one of two orders chosen by dk's address.
TEST(PromisedLaws, BackwardCatchesAReductionChosenByTheAddress) {
  auto impl = kernel("by-address-backward", naive_forward_v2,
                     ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD,
                     [](const attncheck_call_v2* c, const attncheck_grad* g, char* err, size_t n) {
                       return (reinterpret_cast<uintptr_t>(g->dk.data) & 64) ? online_backward_v2(c, g, err, n)
                                                                             : naive_backward_v2(c, g, err, n);
                     });
  const LawReport r = run_law(law_named("backward_rerun_bit_identical"), *impl, promise_options(13));
  ASSERT_EQ(r.status, LawStatus::fail) << r.message;
  EXPECT_NE(r.message.find("ATTNCHECK_PROMISE_DETERMINISTIC_BACKWARD promises every bit"), std::string::npos)
      << r.message;
  EXPECT_EQ(run_law(law_named("grad_deterministic"), *impl, promise_options(13)).status, LawStatus::pass);
}

// Split counts from the batch, and from kv_len: equal within the bound
// (batch_composition_independence passes them without the promise), not bit for bit.
TEST(PromisedLaws, BatchInvarianceCatchesPathsChosenByTheBatchAndTheBounds) {
  auto by_batch = kernel(
      "by-batch", [](const attncheck_call_v2* c, char* err, size_t n) {
        return c->batch >= 3 ? online_forward_v2(c, err, n) : naive_forward_v2(c, err, n);
      }, ATTNCHECK_PROMISE_BATCH_INVARIANT);
  const LawReport r = run_law(law_named("batch_invariance"), *by_batch, promise_options(14));
  ASSERT_EQ(r.status, LawStatus::fail) << r.message;
  EXPECT_NE(r.message.find("ATTNCHECK_PROMISE_BATCH_INVARIANT promises every bit"), std::string::npos) << r.message;
  by_batch->set_promises(0);
  EXPECT_EQ(run_law(law_named("batch_composition_independence"), *by_batch, promise_options(14)).status,
            LawStatus::pass);

  auto by_bound = kernel(
      "by-kv-len", [](const attncheck_call_v2* c, char* err, size_t n) {
        return c->kv_len > 384 ? online_forward_v2(c, err, n) : naive_forward_v2(c, err, n);
      }, ATTNCHECK_PROMISE_BATCH_INVARIANT);
  const LawReport b = run_law(law_named("batch_invariance"), *by_bound, promise_options(15));
  ASSERT_EQ(b.status, LawStatus::fail) << b.message;
  EXPECT_NE(b.message.find("larger bounds"), std::string::npos) << b.message;
}

// The zoo members that make a promise: each fails its pinned promise law
// with the law's message, and passes the law that judges the same property
// without the promise (the same call in place; within the bound).
TEST(PromiseZoo, EachMemberBreaksItsPromiseOnlyInTheLastBits) {
  struct Row { const char* member; const char* promised; const char* unpromised; const char* words; };
  for (const Row& row : {Row{"split_by_batch", "batch_invariance", nullptr, "BATCH_INVARIANT promises"},
                         Row{"path_by_alignment", "rerun_bit_identical", "deterministic", "bytes further"},
                         Row{"grad_dk_order_by_alignment", "backward_rerun_bit_identical", "grad_deterministic",
                             "element(s) of dk differ"}}) {
    const BuiltinInfo* info = find_builtin(row.member);
    ASSERT_NE(info, nullptr) << row.member;
    EXPECT_NE(info->promises, 0u) << row.member << " must make the promise it breaks";
    auto impl = make_builtin(row.member);
    const LawReport r = run_law(law_named(row.promised), *impl, promise_options(20261208, 40));
    ASSERT_EQ(r.status, LawStatus::fail) << row.member << ": " << r.message;
    EXPECT_NE(r.message.find(row.words), std::string::npos) << r.message;
    if (row.unpromised)
      EXPECT_EQ(run_law(law_named(row.unpromised), *make_builtin(row.member), promise_options(20261208, 40)).status,
                LawStatus::pass)
          << row.member;
    auto matches = make_builtin(row.member);
    const Law& oracle_law = law_named(info->backward_v2 ? "grad_matches_oracle" : "matches_oracle");
    EXPECT_EQ(run_law(oracle_law, *matches, promise_options(20261208, 40)).status, LawStatus::pass) << row.member;
  }
}

}  // namespace
}  // namespace attncheck
