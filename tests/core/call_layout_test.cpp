// The encoded call catches every way an implementation can misuse its
// buffers: unwritten elements, writes before or after out, changed inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <array>
#include <cstring>
#include <memory>
#include <utility>

#include "call/call_layout.h"

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

// --- The backward call (grad_call.cpp) ---

// batch 2, heads 4 over 2 kv heads, q_len 3, kv_len 5, head_dim 2, value_dim 3;
// q_lens {3, 1}, kv_lens {5, 2}; dout and every gradient with its own strided
// layout; lse requested. dout holds 0.25, 0.5, ... (padding rows too).
Problem backward_problem(DType t) {
  Shape s{2, 4, 3, 5, 2, 3};
  s.kv_heads = 2;
  Problem p = make_problem(t, s);
  p.q_lens = {3, 1};
  p.kv_lens = {5, 2};
  p.lse_requested = true;
  p.dout.resize(static_cast<std::size_t>(s.out_size()));
  for (std::size_t i = 0; i < p.dout.size(); ++i) p.dout[i] = round_to(t, 0.25 * static_cast<double>(i + 1));
  p.layouts.dout = TensorLayout{{0, 2, 1}, {0, 1, 0}};  // BSHD, one unused element after each head vector
  p.layouts.dq = TensorLayout{{0, 2, 1}, {0, 1, 2}};
  p.layouts.dk = TensorLayout{{1, 0, 2}, {1, 0, 3}};
  p.layouts.dv = TensorLayout{{0, 1, 2}, {0, 0, 1}};
  return p;
}

// A backward problem encoded, its forward answered (out, lse written: 0.5,
// 1.5) and decoded, forward's outputs kept: the state before backward.
struct EncodedGrad : EncodedV2 {
  attncheck_grad grad{};
  Outcome forward;
  ForwardOutputs before;

  explicit EncodedGrad(Problem problem) : EncodedV2(std::move(problem)) {
    grad = abi_grad(p, layout, region.get());
    write_live(0.5);
    for (int64_t bh = 0; bh < p.shape.batch * p.shape.heads; ++bh)
      for (int64_t i = 0; i < p.q_len_of(bh / p.shape.heads); ++i) call.lse[bh * p.shape.q_len + i] = 1.5f;
    forward = decode();
    before = snapshot_forward_outputs(layout, region.get());
  }
  // Extents and live rows of dq (0), dk (1), dv (2).
  std::array<int64_t, 4> extents(int which) const {
    const Shape& s = p.shape;
    const int64_t cols = which == 2 ? s.value_dim : s.head_dim;
    return {s.batch, which == 0 ? s.heads : s.kv_head_count(), which == 0 ? s.q_len : s.kv_len, cols};
  }
  int64_t live_rows(int which, int64_t b) const { return which == 0 ? p.q_len_of(b) : p.kv_len_of(b); }
  attncheck_out_view& view(int which) { return which == 0 ? grad.dq : which == 1 ? grad.dk : grad.dv; }
  uint8_t* element(int which, int64_t b, int64_t h, int64_t r, int64_t c) {
    const attncheck_out_view& v = view(which);
    const int64_t at = b * v.stride[0] + h * v.stride[1] + r * v.stride[2] + c * v.stride[3];
    return static_cast<uint8_t*>(v.data) + at * static_cast<int64_t>(dtype_bytes(p.dtype));
  }
  // Writes value + which into every live element of the three gradients.
  void write_gradients(double value) {
    for (int which = 0; which < 3; ++which) {
      const auto e = extents(which);
      for (int64_t b = 0; b < e[0]; ++b)
        for (int64_t h = 0; h < e[1]; ++h)
          for (int64_t r = 0; r < live_rows(which, b); ++r)
            for (int64_t c = 0; c < e[3]; ++c) encode_element(p.dtype, value + which, element(which, b, h, r, c));
    }
  }
  Outcome decode_backward() { return decode_grad(p, layout, region.get(), before, forward); }
};

TEST(CallLayoutGrad, GradientViewsFollowTheirLayouts) {
  const Problem p = backward_problem(DType::f32);
  ASSERT_EQ(p.inconsistency(), "");
  EncodedGrad e(p);
  ASSERT_EQ(e.forward.status, CallStatus::ok) << e.forward.message;
  EXPECT_TRUE(e.layout.backward);
  // dout: BSHD over out's extents [2][4][3][3] with 1 unused element after each head vector.
  EXPECT_EQ(e.grad.dout.stride[3], 1);
  EXPECT_EQ(e.grad.dout.stride[1], 4);
  EXPECT_EQ(e.grad.dout.stride[2], 16);
  EXPECT_EQ(e.grad.dout.stride[0], 48);
  const float* dout = static_cast<const float*>(e.grad.dout.data);
  EXPECT_EQ(dout[1 * 48 + 3 * 4 + 2 * 16 + 1], static_cast<float>(p.dout[p.out_at(1 * 4 + 3, 2, 1)]))
      << "batch 1, head 3, row 2 (a padding row: it holds what the Problem holds)";
  EXPECT_TRUE(std::isnan(dout[3])) << "a gap of dout holds NaN";
  // dk: [head][batch][key] order over [2][2][5][2], 1 unused element after each batch and 3 after each key.
  const std::array<int64_t, 4> dk = TensorLayout{{1, 0, 2}, {1, 0, 3}}.strides({2, 2, 5, 2});
  for (int a = 0; a < 4; ++a) EXPECT_EQ(e.grad.dk.stride[a], dk[a]) << a;
  // The zones lie apart from each other and from every input and output.
  const uint8_t* base = e.region.get();
  EXPECT_GE(static_cast<const uint8_t*>(e.grad.dq.data) - base,
            static_cast<std::ptrdiff_t>(e.layout.lse_guard_after + CallLayout::kGuardBytes));
  EXPECT_GT(static_cast<const uint8_t*>(e.grad.dk.data), static_cast<const uint8_t*>(e.grad.dq.data));
  EXPECT_GT(static_cast<const uint8_t*>(e.grad.dv.data), static_cast<const uint8_t*>(e.grad.dk.data));
  EXPECT_LE(e.layout.dv.end(), e.layout.total);
  EXPECT_LT(e.layout.dout + e.layout.dout_bytes, e.layout.inputs_end + 1) << "dout is an input";
  EXPECT_FALSE(layout_for(p, 1).backward) << "a v1 call has no backward";
}

TEST(CallLayoutGrad, WrittenGradientsDecodeWithNaNPadding) {
  for (DType t : every_dtype()) {
    EncodedGrad e(backward_problem(t));
    e.write_gradients(0.25);
    const Outcome o = e.decode_backward();
    ASSERT_EQ(o.status, CallStatus::ok) << dtype_name(t) << ": " << o.message;
    const Shape& s = e.p.shape;
    ASSERT_EQ(o.dq.size(), static_cast<std::size_t>(s.q_size()));
    ASSERT_EQ(o.dk.size(), static_cast<std::size_t>(s.k_size()));
    ASSERT_EQ(o.dv.size(), static_cast<std::size_t>(s.v_size()));
    EXPECT_EQ(o.dq[e.p.q_at(1 * 4 + 2, 0, 1)], 0.25);  // batch 1, row 0: live
    EXPECT_TRUE(std::isnan(o.dq[e.p.q_at(1 * 4 + 2, 1, 1)])) << "batch 1, row 1 is padding (q_lens[1] = 1)";
    EXPECT_EQ(o.dk[e.p.k_at(1 * 2 + 1, 1, 0)], 1.25);  // batch 1, key 1: live
    EXPECT_TRUE(std::isnan(o.dk[e.p.k_at(1 * 2 + 1, 2, 0)])) << "batch 1, key 2 is padding (kv_lens[1] = 2)";
    EXPECT_EQ(o.dv[e.p.v_at(0, 4, 2)], 2.25);
    EXPECT_TRUE(std::isnan(o.dv[e.p.v_at(1 * 2, 4, 2)]));
    // Out and lse are forward's.
    EXPECT_EQ(o.out[e.p.out_at(0, 2, 2)], 0.5);
    EXPECT_EQ(o.lse[0], 1.5);
  }
}

TEST(CallLayoutGrad, AWriteIntoAGapOrAPaddingKeyOfAGradientIsFound) {
  {
    EncodedGrad e(backward_problem(DType::f32));
    e.write_gradients(1.0);
    encode_element(e.p.dtype, 1.0, e.element(0, 0, 0, 0, 2));  // one past row 0's head_dim 2: dq's gap
    const Outcome o = e.decode_backward();
    EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
    EXPECT_NE(o.message.find("backward wrote into dq's allocation outside its elements"), std::string::npos)
        << o.message;
    EXPECT_NE(o.message.find("a gap after the last column"), std::string::npos) << o.message;
  }
  {
    EncodedGrad e(backward_problem(DType::f32));
    e.write_gradients(1.0);
    encode_element(e.p.dtype, 0.0, e.element(1, 1, 0, 3, 1));  // batch 1, key 3: padding (kv_lens[1] = 2)
    const Outcome o = e.decode_backward();
    EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
    EXPECT_NE(o.message.find("dk's allocation"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("the padding key [b=1][h=0][j=3] (kv_lens[1] = 2)"), std::string::npos) << o.message;
  }
  {
    EncodedGrad e(backward_problem(DType::f32));
    e.write_gradients(1.0);
    static_cast<uint8_t*>(e.grad.dv.data)[-3] ^= 1;  // in dv's guard before
    const Outcome o = e.decode_backward();
    EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
    EXPECT_NE(o.message.find("backward wrote 3 bytes before the start of dv"), std::string::npos) << o.message;
  }
  {
    EncodedGrad e(backward_problem(DType::f64));
    e.write_gradients(1.0);
    static_cast<uint8_t*>(e.grad.dq.data)[e.layout.dq.bytes] ^= 1;  // one past dq's span
    const Outcome o = e.decode_backward();
    EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
    EXPECT_NE(o.message.find("backward wrote past the end of dq (byte 0 after it)"), std::string::npos) << o.message;
  }
}

TEST(CallLayoutGrad, BackwardWritingOutOrLseIsFound) {
  {
    EncodedGrad e(backward_problem(DType::f32));
    e.write_gradients(1.0);
    e.write_live(0.75);  // "recomputes" out in place
    const Outcome o = e.decode_backward();
    EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
    EXPECT_NE(o.message.find("backward wrote into out, which is an input of the backward call"), std::string::npos)
        << o.message;
  }
  {
    EncodedGrad e(backward_problem(DType::f32));
    e.write_gradients(1.0);
    e.call.lse[4] = 0.0f;  // batch 0, head 1, row 1: live
    const Outcome o = e.decode_backward();
    EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
    EXPECT_NE(o.message.find("backward wrote into lse, which is an input of the backward call"), std::string::npos)
        << o.message;
  }
  {
    EncodedGrad e(backward_problem(DType::f32));
    e.write_gradients(1.0);
    static_cast<uint8_t*>(e.call.out.data)[e.layout.out_bytes + 5] ^= 1;  // out's guard after
    const Outcome o = e.decode_backward();
    EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
    EXPECT_NE(o.message.find("backward wrote past the end of out (byte 5 after it)"), std::string::npos) << o.message;
  }
  {
    EncodedGrad e(backward_problem(DType::f32));
    e.write_gradients(1.0);
    const_cast<float*>(static_cast<const float*>(e.grad.dout.data))[3] = 0.0f;  // a gap of dout
    const Outcome o = e.decode_backward();
    EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
    EXPECT_NE(o.message.find("backward changed the input tensor dout"), std::string::npos) << o.message;
  }
}

TEST(CallLayoutGrad, AnUnwrittenDkElementIsNamed) {
  EncodedGrad e(backward_problem(DType::bf16));
  e.write_gradients(1.0);
  // Put dk[b=0][h=1][j=2][d=0] back to what encode_call left there (the poison),
  // read from an encoding of the same problem.
  EncodedGrad fresh(backward_problem(DType::bf16));
  std::memcpy(e.element(1, 0, 1, 2, 0), fresh.element(1, 0, 1, 2, 0), dtype_bytes(DType::bf16));
  const Outcome o = e.decode_backward();
  EXPECT_EQ(o.status, CallStatus::unwritten_output);
  // dk's live elements: (5 + 2) keys * 2 kv heads * head_dim 2.
  EXPECT_NE(o.message.find("backward left 1 of 28 dk elements unwritten, first at dk[b=0][h=1][j=2][d=0]"),
            std::string::npos)
      << o.message;
  EXPECT_EQ(o.message.find("dq"), std::string::npos) << o.message;
}

TEST(CallLayoutGrad, ForwardWritingAGradientIsFound) {
  EncodedV2 e(backward_problem(DType::f32));
  e.write_live(0.5);
  for (int64_t bh = 0; bh < 8; ++bh)
    for (int64_t i = 0; i < e.p.q_len_of(bh / 4); ++i) e.call.lse[bh * 3 + i] = 1.5f;
  ASSERT_EQ(e.decode().status, CallStatus::ok) << e.decode().message;
  const attncheck_grad g = abi_grad(e.p, e.layout, e.region.get());
  static_cast<uint8_t*>(g.dk.data)[0] ^= 1;
  const Outcome o = e.decode();
  EXPECT_EQ(o.status, CallStatus::out_of_bounds_write);
  EXPECT_NE(o.message.find("wrote into dk's allocation, which the forward call is not given"), std::string::npos)
      << o.message;
}

TEST(CallLayoutGrad, BackwardReturnCodesMapToStatuses) {
  EncodedGrad e(backward_problem(DType::f32));
  const Outcome unsupported =
      backward_outcome_from_return(ATTNCHECK_UNSUPPORTED, "no GQA", e.p, e.layout, e.region.get(), e.before, e.forward);
  EXPECT_EQ(unsupported.status, CallStatus::unsupported);
  EXPECT_EQ(unsupported.message, "backward: no GQA");
  const Outcome err = backward_outcome_from_return(7, "bad", e.p, e.layout, e.region.get(), e.before, e.forward);
  EXPECT_EQ(err.status, CallStatus::error);
  EXPECT_EQ(err.message, "backward returned 7: bad");
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, CallLayoutTest, ::testing::ValuesIn(every_dtype()),
                         [](const ::testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace attncheck
