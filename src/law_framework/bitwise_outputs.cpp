#include "law_framework/bitwise_outputs.h"

#include <cstring>
#include <sstream>

#include "law_framework/grad_support.h"
#include "law_framework/law_support.h"
#include "problem/number_text.h"

namespace attncheck {

namespace {

uint64_t bitwise_bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// How many elements of x and y (over their common length) differ in their bits, and the first.
struct BitCount {
  int64_t count = 0, first = -1;
};

BitCount bitwise_count(const std::vector<double>& x, const std::vector<double>& y) {
  BitCount c;
  for (std::size_t k = 0; k < x.size() && k < y.size(); ++k)
    if (bitwise_bits(x[k]) != bitwise_bits(y[k])) {
      ++c.count;
      if (c.first < 0) c.first = static_cast<int64_t>(k);
    }
  return c;
}

// "<count> element(s)<of> differ <when>; first <element>: a (bits 0x..) then b (bits 0x..)[, d apart]"
std::string bitwise_text(const Problem& p, const BitCount& c, const std::string& of, const std::string& when,
                         const std::string& element, double a, double b) {
  const PairText t = pair_text(a, b, p.dtype);
  std::ostringstream m;
  m << c.count << " element(s)" << of << " differ " << when << "; first " << element << ": " << t.a << " (bits 0x"
    << std::hex << bitwise_bits(a) << ") then " << t.b << " (bits 0x" << bitwise_bits(b) << std::dec << ")";
  if (const std::string d = difference_text(a, b, p.dtype); !d.empty()) m << ", " << d << " apart";
  return m.str();
}

}  // namespace

std::optional<std::string> out_bit_difference(const Problem& p, const std::vector<double>& a,
                                              const std::vector<double>& b, const std::string& when) {
  const BitCount c = bitwise_count(a, b);
  if (c.first < 0) return std::nullopt;
  const auto k = static_cast<std::size_t>(c.first);
  return bitwise_text(p, c, "", when, output_element(p, c.first), a[k], b[k]);
}

std::optional<std::string> outputs_bit_difference(const Problem& p, const Outcome& a, const Outcome& b,
                                                  const std::string& when) {
  if (auto m = out_bit_difference(p, a.out, b.out, when)) return m;
  const BitCount c = bitwise_count(a.lse, b.lse);
  if (c.first < 0) return std::nullopt;
  const int64_t q_len = p.shape.q_len;
  const auto k = static_cast<std::size_t>(c.first);
  return bitwise_text(p, c, " of lse", when, "lse of " + output_row(p, c.first / q_len, c.first % q_len), a.lse[k],
                      b.lse[k]);
}

std::optional<std::string> grads_bit_difference(const Problem& p, const Outcome& a, const Outcome& b,
                                                const std::string& when) {
  for (GradTensor t : {GradTensor::dq, GradTensor::dk, GradTensor::dv}) {
    const BitCount c = bitwise_count(grad_of(a, t), grad_of(b, t));
    if (c.first < 0) continue;
    const auto k = static_cast<std::size_t>(c.first);
    return bitwise_text(p, c, std::string(" of ") + grad_tensor_name(t), when, grad_element(p, t, c.first),
                        grad_of(a, t)[k], grad_of(b, t)[k]);
  }
  return std::nullopt;
}

}  // namespace attncheck
