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

INSTANTIATE_TEST_SUITE_P(AllDTypes, CallLayoutTest, ::testing::ValuesIn(every_dtype()),
                         [](const ::testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace attncheck
