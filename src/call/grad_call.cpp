// The backward call of a backward problem, made on the region its forward
// call used (call_layout.h): the gradient views, forward's outputs kept for
// the comparison after backward (they are backward's inputs), and the
// decoding of dq, dk and dv with every fault named as backward's.
#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

#include "call/call_layout.h"
#include "call/call_zones.h"

namespace attncheck {

using namespace zones;

namespace {

// What backward did to forward's out (or lse) zone, [guard | name | guard]
// from `guard_before` with the elements at `data` (`bytes` of them): "" when
// it is as `before`.
std::string changed_forward_output(const uint8_t* base, const std::vector<uint8_t>& before, std::size_t guard_before,
                                   std::size_t data, std::size_t bytes, const char* name) {
  if (before.empty() || std::memcmp(base + guard_before, before.data(), before.size()) == 0) return "";
  const auto first = std::mismatch(before.begin(), before.end(), base + guard_before).first;
  const std::size_t at = guard_before + static_cast<std::size_t>(first - before.begin());
  std::ostringstream os;
  if (at < data)
    os << "wrote " << (data - at) << " bytes before the start of " << name;
  else if (at >= data + bytes)
    os << "wrote past the end of " << name << " (byte " << (at - data - bytes) << " after it)";
  else
    os << "wrote into " << name << ", which is an input of the backward call (byte " << (at - data) << " of "
       << name << "'s allocation)";
  return os.str();
}

// The first out-of-bounds write of backward, or "".
std::string backward_write_outside(const Problem& p, const CallLayout& l, const uint8_t* base,
                                   const ForwardOutputs& before) {
  for (const GradTensor g : kGradTensors) {
    const CallLayout::GradZone& z = grad_zone_of(l, g);
    const char* name = grad_name(g);
    std::ostringstream why;
    if (long at = first_changed_guard(base + z.guard_before); at >= 0)
      why << "wrote " << (CallLayout::kGuardBytes - static_cast<std::size_t>(at)) << " bytes before the start of "
          << name;
    else if (long after = first_changed_guard(base + z.guard_after); after >= 0)
      why << "wrote past the end of " << name << " (byte " << after << " after it)";
    else
      why << changed_non_live(p, grad_view(p, l, g), name, base);
    if (!why.str().empty()) return why.str();
  }
  if (std::string out = changed_forward_output(base, before.out_zone, l.guard_before, l.out, l.out_bytes, "out");
      !out.empty())
    return out;
  if (std::string lse = changed_forward_output(base, before.lse_zone, l.lse_guard_before, l.lse, l.lse_bytes, "lse");
      !lse.empty())
    return lse;
  if (std::string input = changed_input(p, l, base); !input.empty()) return "changed " + input;
  return "";
}

}  // namespace

ForwardOutputs snapshot_forward_outputs(const CallLayout& l, const uint8_t* base) {
  ForwardOutputs f;
  f.out_zone.assign(base + l.guard_before, base + l.guard_after + CallLayout::kGuardBytes);
  if (l.lse_bytes > 0) f.lse_zone.assign(base + l.lse_guard_before, base + l.lse_guard_after + CallLayout::kGuardBytes);
  return f;
}

attncheck_grad abi_grad(const Problem& p, const CallLayout& l, uint8_t* base) {
  (void)p;
  attncheck_grad g{};
  if (!l.backward) return g;
  g.dout.data = base + l.dout;
  std::copy(l.dout_stride, l.dout_stride + 4, g.dout.stride);
  auto out = [base](attncheck_out_view& v, const CallLayout::GradZone& z) {
    v.data = base + z.data;
    std::copy(z.stride, z.stride + 4, v.stride);
  };
  out(g.dq, l.dq);
  out(g.dk, l.dk);
  out(g.dv, l.dv);
  return g;
}

Outcome decode_grad(const Problem& p, const CallLayout& l, const uint8_t* base, const ForwardOutputs& before,
                    Outcome forward) {
  if (!l.backward) return {CallStatus::error, {}, "no gradients to decode: the call was not laid out for backward"};
  if (std::string why = backward_write_outside(p, l, base, before); !why.empty())
    return {CallStatus::out_of_bounds_write, {}, "backward " + why};
  std::vector<double>* into[] = {&forward.dq, &forward.dk, &forward.dv};
  std::ostringstream unwritten;
  for (const GradTensor g : kGradTensors) {
    const OutputView view = grad_view(p, l, g);
    Decoded d = decode_view(p, view, p.dtype, base, std::numeric_limits<double>::quiet_NaN());
    if (d.unwritten > 0)
      unwritten << (unwritten.str().empty() ? "backward left " : "; ") << d.unwritten << " of "
                << live_elements(p, view) << " " << grad_name(g) << " elements unwritten, first at " << d.first;
    *into[static_cast<int>(g)] = std::move(d.values);
  }
  if (!unwritten.str().empty()) return {CallStatus::unwritten_output, {}, unwritten.str()};
  return forward;
}

Outcome backward_outcome_from_return(int rc, const char* err, const Problem& p, const CallLayout& l,
                                     const uint8_t* base, const ForwardOutputs& before, Outcome forward) {
  if (rc == ATTNCHECK_OK) return decode_grad(p, l, base, before, std::move(forward));
  const bool has_err = err && *err;
  std::ostringstream m;
  if (rc == ATTNCHECK_UNSUPPORTED)
    m << "backward: " << (has_err ? err : "answered ATTNCHECK_UNSUPPORTED");
  else
    m << "backward returned " << rc << (has_err ? ": " : "") << (has_err ? err : "");
  return {rc == ATTNCHECK_UNSUPPORTED ? CallStatus::unsupported : CallStatus::error, {}, m.str()};
}

}  // namespace attncheck
