// The encoded call catches every way an implementation can misuse its
// buffers: unwritten elements, writes before or after out, changed inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "problem/call_layout.h"

namespace attncheck {
namespace {

struct Encoded {
  Problem p;
  CallLayout layout;
  std::unique_ptr<uint8_t, decltype(&std::free)> region{nullptr, &std::free};
  attncheck_call call{};

  explicit Encoded(DType t) {
    p = make_problem(t, Shape{1, 2, 3, 4, 5, 3});
    p.mask.assign(p.shape.mask_size(), 1);
    for (size_t i = 0; i < p.q.size(); ++i) p.q[i] = round_to(t, 0.25 * i);
    layout = layout_for(p);
    region.reset(static_cast<uint8_t*>(std::aligned_alloc(CallLayout::kAlign, layout.total)));
    encode_call(p, layout, region.get());
    call = abi_call(p, layout, region.get());
  }
  uint8_t* out_bytes() { return static_cast<uint8_t*>(call.out); }
  void write_all_outputs() {
    for (int64_t i = 0; i < p.shape.out_size(); ++i) encode_element(p.dtype, 0.5, out_bytes() + i * dtype_bytes(p.dtype));
  }
  Outcome decode() { return outcome_from_return(ATTNCHECK_OK, "", p, layout, region.get()); }
};

class CallLayoutTest : public ::testing::TestWithParam<DType> {};

TEST_P(CallLayoutTest, FullyWrittenOutputDecodes) {
  Encoded e(GetParam());
  e.write_all_outputs();
  const Outcome o = e.decode();
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  for (double x : o.out) EXPECT_EQ(x, 0.5);
}

TEST_P(CallLayoutTest, UnwrittenElementIsFound) {
  Encoded f(GetParam());  // writes every element but the last
  for (int64_t i = 0; i + 1 < f.p.shape.out_size(); ++i) encode_element(f.p.dtype, 1.0, f.out_bytes() + i * dtype_bytes(f.p.dtype));
  const Outcome o = f.decode();
  EXPECT_EQ(o.status, CallStatus::unwritten_output);
  EXPECT_NE(o.message.find("1 of"), std::string::npos) << o.message;
}

TEST_P(CallLayoutTest, ComputedNaNIsNotMistakenForPoison) {
  Encoded e(GetParam());
  e.write_all_outputs();
  encode_element(e.p.dtype, std::nan(""), e.out_bytes());
  EXPECT_EQ(e.decode().status, CallStatus::ok);
}

TEST_P(CallLayoutTest, WritePastTheEndIsFound) {
  Encoded e(GetParam());
  e.write_all_outputs();
  e.out_bytes()[e.layout.out_bytes] ^= 1;
  const Outcome o = e.decode();
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("past the end"), std::string::npos) << o.message;
}

TEST_P(CallLayoutTest, WriteBeforeTheStartIsFound) {
  Encoded e(GetParam());
  e.write_all_outputs();
  e.out_bytes()[-1] ^= 1;
  EXPECT_EQ(e.decode().status, CallStatus::out_of_bounds_write);
}

TEST_P(CallLayoutTest, ChangedInputIsFound) {
  Encoded e(GetParam());
  e.write_all_outputs();
  const_cast<uint8_t*>(static_cast<const uint8_t*>(e.call.k))[0] ^= 0x40;
  const Outcome o = e.decode();
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("input tensor k"), std::string::npos) << o.message;
}

TEST_P(CallLayoutTest, ReturnCodesMapToStatuses) {
  Encoded e(GetParam());
  EXPECT_EQ(outcome_from_return(ATTNCHECK_UNSUPPORTED, "no f16", e.p, e.layout, e.region.get()).status,
            CallStatus::unsupported);
  const Outcome err = outcome_from_return(7, "bad", e.p, e.layout, e.region.get());
  EXPECT_EQ(err.status, CallStatus::error);
  EXPECT_NE(err.message.find("returned 7: bad"), std::string::npos);
}

// --- ABI v2 views ---

struct EncodedV2 {
  Problem p;
  CallLayout layout;
  std::unique_ptr<uint8_t, decltype(&std::free)> region{nullptr, &std::free};
  attncheck_call_v2 call{};

  explicit EncodedV2(Problem problem, int abi = 2) : p(std::move(problem)) {
    layout = layout_for(p, abi);
    region.reset(static_cast<uint8_t*>(std::aligned_alloc(CallLayout::kAlign, layout.total)));
    encode_call(p, layout, region.get());
    call = abi_call_v2(p, layout, region.get());
  }
  // Writes value into every live element of out (rows below q_lens) through its strides.
  void write_live(double value) {
    const std::size_t b = dtype_bytes(p.dtype);
    for (int64_t bb = 0; bb < p.shape.batch; ++bb)
      for (int64_t h = 0; h < p.shape.heads; ++h)
        for (int64_t i = 0; i < p.q_len_of(bb); ++i)
          for (int64_t c = 0; c < p.shape.value_dim; ++c) {
            const int64_t at = bb * call.out.stride[0] + h * call.out.stride[1] + i * call.out.stride[2] + c;
            encode_element(p.dtype, value, static_cast<uint8_t*>(call.out.data) + at * b);
          }
  }
  Outcome decode() { return outcome_from_return(ATTNCHECK_OK, "", p, layout, region.get()); }
};

Problem strided(DType t) {
  Shape s{2, 2, 3, 4, 2, 2};
  Problem p = make_problem(t, s);
  for (std::size_t i = 0; i < p.q.size(); ++i) p.q[i] = round_to(t, 0.5 * static_cast<double>(i));
  p.layouts.q = TensorLayout{{0, 2, 1}, {0, 3, 0}};  // BSHD, 3 unused elements after each head vector
  p.layouts.out = TensorLayout{{0, 2, 1}, {0, 1, 2}};
  p.q_lens = {3, 1};
  return p;
}

TEST(CallLayoutV2, StridesFollowTheLayout) {
  const Problem p = strided(DType::f32);
  EncodedV2 e(p);
  // q: BSHD [b][row][head][col] with head gap 3: head stride 2 + 3, row stride 2 * 5.
  EXPECT_EQ(e.call.q.stride[3], 1);
  EXPECT_EQ(e.call.q.stride[1], 5);
  EXPECT_EQ(e.call.q.stride[2], 10);
  EXPECT_EQ(e.call.q.stride[0], 30);
  const float* q = static_cast<const float*>(e.call.q.data);
  EXPECT_EQ(q[1 * e.call.q.stride[1] + 2 * e.call.q.stride[2] + 1], static_cast<float>(p.q[p.q_at(1, 2, 1)]));
  EXPECT_TRUE(std::isnan(q[2])) << "a gap of an input view holds NaN, so a kernel that ignores strides reads NaN";
}

TEST(CallLayoutV2, LiveElementsDecodeAndPaddingRowsReadZero) {
  EncodedV2 e(strided(DType::f64));
  e.write_live(0.25);
  const Outcome o = e.decode();
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  EXPECT_EQ(o.out[e.p.out_at(2, 0, 1)], 0.25);  // batch 1, head 0, row 0: live
  EXPECT_EQ(o.out[e.p.out_at(2, 1, 1)], 0.0);   // batch 1, row 1: padding (q_lens[1] = 1)
}

TEST(CallLayoutV2, AnUnwrittenLiveElementIsFound) {
  EncodedV2 e(strided(DType::f32));
  const Outcome o = e.decode();
  EXPECT_EQ(o.status, CallStatus::unwritten_output);
  EXPECT_NE(o.message.find("of 16 output elements"), std::string::npos) << o.message;  // (3 + 1) rows * 2 heads * 2
}

TEST(CallLayoutV2, AWriteIntoAGapOrAPaddingRowIsFound) {
  {
    EncodedV2 e(strided(DType::f32));
    e.write_live(1.0);
    static_cast<uint8_t*>(e.call.out.data)[2 * sizeof(float)] ^= 1;  // after row 0's two elements
    const Outcome o = e.decode();
    EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
    EXPECT_NE(o.message.find("a gap after the last column"), std::string::npos) << o.message;
  }
  {
    EncodedV2 e(strided(DType::f32));
    e.write_live(1.0);
    const int64_t at = 1 * e.call.out.stride[0] + 2 * e.call.out.stride[2];  // batch 1, row 2: padding
    static_cast<float*>(e.call.out.data)[at] = 3.0f;
    const Outcome o = e.decode();
    EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
    EXPECT_NE(o.message.find("the padding row [b=1][h=0][i=2]"), std::string::npos) << o.message;
  }
}

TEST(CallLayoutV2, AChangedInputGapIsFound) {
  EncodedV2 e(strided(DType::f32));
  e.write_live(1.0);
  const_cast<float*>(static_cast<const float*>(e.call.q.data))[2] = 0.0f;  // a gap
  const Outcome o = e.decode();
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("input tensor q"), std::string::npos) << o.message;
}

TEST(CallLayoutV2, BroadcastMaskAndBiasGetStrideZero) {
  Problem p = make_problem(DType::f32, Shape{2, 3, 4, 5, 2, 2});
  p.mask.assign(5 * 4, 1);  // per row, broadcast over batch and heads
  p.mask_broadcast = Broadcast{false, false, true};
  p.bias.assign(3 * 5, 0.5);  // per head
  p.bias_broadcast = Broadcast{false, true, false};
  ASSERT_EQ(p.inconsistency(), "");
  EncodedV2 e(p);
  EXPECT_EQ(e.call.mask.stride[0], 0);
  EXPECT_EQ(e.call.mask.stride[1], 0);
  EXPECT_EQ(e.call.mask.stride[2], 5);
  EXPECT_EQ(e.call.bias.stride[0], 0);
  EXPECT_EQ(e.call.bias.stride[1], 5);
  EXPECT_EQ(e.call.bias.stride[2], 0);
  EXPECT_EQ(e.layout.mask_bytes, 20u) << "a broadcast mask is stored once";
}

TEST(CallLayoutV2, AV1CallGetsTheBroadcastMaskWhole) {
  Problem p = make_problem(DType::f32, Shape{2, 3, 4, 5, 2, 2});
  p.mask.assign(5 * 4, 1);
  p.mask[7] = 0;  // row 1, key 2 of every (batch, head)
  p.mask_broadcast = Broadcast{false, false, true};
  const CallLayout l = layout_for(p, 1);
  EXPECT_EQ(l.mask_bytes, static_cast<std::size_t>(p.shape.mask_size()));
  std::unique_ptr<uint8_t, decltype(&std::free)> region(
      static_cast<uint8_t*>(std::aligned_alloc(CallLayout::kAlign, l.total)), &std::free);
  encode_call(p, l, region.get());
  const attncheck_call c = abi_call(p, l, region.get());
  for (int64_t bh = 0; bh < 6; ++bh) EXPECT_EQ(c.mask[(bh * 4 + 1) * 5 + 2], 0) << bh;
  EXPECT_EQ(c.mask[(5 * 4 + 1) * 5 + 3], 1);
}

TEST(CallLayoutV2, LseIsGuardedAndDecoded) {
  Problem p = make_problem(DType::f32, Shape{1, 2, 3, 4, 2, 2});
  p.lse_requested = true;
  p.q_lens = {2};
  EncodedV2 e(p);
  e.write_live(0.0);
  ASSERT_NE(e.call.lse, nullptr);
  EXPECT_EQ(e.decode().status, CallStatus::unwritten_output);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 2; ++i) e.call.lse[h * 3 + i] = 1.5f;
  Outcome o = e.decode();
  ASSERT_EQ(o.status, CallStatus::ok) << o.message;
  EXPECT_EQ(o.lse[1], 1.5);
  EXPECT_EQ(o.lse[2], 0.0);  // padding row
  e.call.lse[2] = 9.0f;      // head 0, row 2: padding
  o = e.decode();
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("lse"), std::string::npos) << o.message;
  e.call.lse[2] = 0;
  std::memcpy(&e.call.lse[2], e.region.get() + e.layout.lse_guard_before, sizeof(float));  // not the guard value
  e.call.lse[6] = 1.0f;  // one past the end
  EXPECT_EQ(e.decode().status, CallStatus::out_of_bounds_write);
}

TEST(CallLayoutV2, LseIsFloatAlignedAfterAnOddSixteenBitOut) {
  Problem p = make_problem(DType::f16, Shape{1, 1, 1, 1, 1, 1});  // out: one 2-byte element
  p.lse_requested = true;
  const CallLayout l = layout_for(p, 2);
  EXPECT_EQ(l.lse % alignof(float), 0u);
  EXPECT_EQ(l.lse % CallLayout::kAlign, 0u);
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, CallLayoutTest, ::testing::ValuesIn(every_dtype()),
                         [](const ::testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace attncheck
