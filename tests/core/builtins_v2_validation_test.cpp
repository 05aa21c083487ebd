// A v2 call that breaks the ABI's contract gets "invalid call: ..." and
// kCallError from every reference, and nothing is written; an unknown dtype
// is ATTNCHECK_UNSUPPORTED.
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "impls/builtins.h"
#include "impls/typed_call.h"
#include "hand_built_v2_call.h"

namespace attncheck {
namespace {

using namespace testing_v2;

struct BadCall {
  const char* what;
  std::function<void(attncheck_call_v2&)> edit;
  const char* message;  // a part of the expected message
};

std::vector<BadCall> bad_calls() {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return {
      {"zero batch", [](attncheck_call_v2& c) { c.batch = 0; }, "every extent must be positive"},
      {"zero kv_heads", [](attncheck_call_v2& c) { c.kv_heads = 0; }, "every extent must be positive"},
      {"negative head_dim", [](attncheck_call_v2& c) { c.head_dim = -1; }, "every extent must be positive"},
      {"kv_heads not dividing heads", [](attncheck_call_v2& c) { c.kv_heads = 3; }, "kv_heads must divide heads"},
      {"null q", [](attncheck_call_v2& c) { c.q.data = nullptr; }, "must not be NULL"},
      {"null out", [](attncheck_call_v2& c) { c.out.data = nullptr; }, "must not be NULL"},
      {"negative k stride", [](attncheck_call_v2& c) { c.k.stride[1] = -1; }, "k has a negative stride"},
      {"q col stride 2", [](attncheck_call_v2& c) { c.q.stride[3] = 2; }, "q.stride[3] must be 1"},
      {"out col stride 0", [](attncheck_call_v2& c) { c.out.stride[3] = 0; }, "out.stride[3] must be 1"},
      {"mask col stride 0", [](attncheck_call_v2& c) { c.mask.stride[3] = 0; }, "mask.stride[3] must be 1"},
      {"negative bias stride", [](attncheck_call_v2& c) { c.bias.stride[2] = -5; }, "bias has a negative stride"},
      {"q_lens past q_len", [](attncheck_call_v2& c) { const_cast<int32_t*>(c.q_lens)[1] = 38; }, "q_lens[1]"},
      {"negative kv_lens", [](attncheck_call_v2& c) { const_cast<int32_t*>(c.kv_lens)[0] = -1; }, "kv_lens[0]"},
      {"softcap NaN", [](attncheck_call_v2& c) { c.softcap = std::nan(""); }, "softcap"},
      {"softcap negative", [](attncheck_call_v2& c) { c.softcap = -1; }, "softcap"},
      {"softcap infinite", [](attncheck_call_v2& c) { c.softcap = INFINITY; }, "softcap"},
      {"causal 3", [](attncheck_call_v2& c) { const int raw = 3; std::memcpy(&c.causal, &raw, sizeof raw); }, "causal"},
      {"causal -1", [](attncheck_call_v2& c) { const int raw = -1; std::memcpy(&c.causal, &raw, sizeof raw); }, "causal"},
      {"sink NaN", [](attncheck_call_v2& c) { const_cast<float*>(c.sinks)[2] = std::nanf(""); }, "sinks[2]"},
      {"alibi slope infinite", [](attncheck_call_v2& c) { const_cast<float*>(c.alibi_slopes)[0] = INFINITY; },
       "alibi_slopes[0]"},
      {"extents overflow", [](attncheck_call_v2& c) { c.batch = 1LL << 40, c.q_len = 1LL << 30; }, "overflow"},
      {"strides overflow", [](attncheck_call_v2& c) { c.v.stride[0] = kMax / 4; }, "v's strides overflow"},
      {"stride product overflow", [](attncheck_call_v2& c) { c.q.stride[2] = kMax; }, "q's strides overflow"},
  };
}

TEST(BuiltinsV2Validation, InvalidCallsAreRefusedAndWriteNothing) {
  CallSpec s;
  s.heads = 4, s.kv_heads = 2, s.q_lens = {37, 20}, s.kv_lens = {75, 10};
  s.mask = true, s.bias = true, s.alibi_slopes = {1, 1, 1, 1}, s.sinks = {0, 0, 0, 0}, s.lse = true;
  for (const char* name : {"reference", "naive", "online"}) {
    const BuiltinInfo* builtin = find_builtin(name);
    ASSERT_TRUE(builtin && builtin->forward_v2) << name;
    for (const BadCall& bad : bad_calls()) {
      SCOPED_TRACE(std::string(name) + ": " + bad.what);
      std::mt19937_64 rng(1);
      TestCall t = make_test_call(s, rng);
      char err[256] = "";
      ASSERT_EQ(builtin->forward_v2(&t.enc.call, err, sizeof err), ATTNCHECK_OK) << err;  // valid as built
      t.reset_outputs();
      bad.edit(t.enc.call);
      EXPECT_EQ(builtin->forward_v2(&t.enc.call, err, sizeof err), kCallError);
      EXPECT_EQ(std::string(err).rfind("invalid call: ", 0), 0u) << err;
      EXPECT_NE(std::string(err).find(bad.message), std::string::npos) << err;
      for (unsigned char byte : t.enc.out.bytes) ASSERT_EQ(byte, kSentinel);
    }
    char err[256] = "";
    EXPECT_EQ(builtin->forward_v2(nullptr, err, sizeof err), kCallError);
    EXPECT_STREQ(err, "invalid call: call is NULL");
    EXPECT_EQ(builtin->forward_v2(nullptr, nullptr, 0), kCallError);  // no err buffer: still no crash

    std::mt19937_64 rng(1);
    TestCall t = make_test_call(s, rng);
    const int dtype = 7;
    std::memcpy(&t.enc.call.dtype, &dtype, sizeof dtype);
    EXPECT_EQ(builtin->forward_v2(&t.enc.call, err, sizeof err), ATTNCHECK_UNSUPPORTED) << name;
    EXPECT_NE(std::string(err).find("dtype 7"), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace attncheck
