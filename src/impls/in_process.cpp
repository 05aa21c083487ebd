#include "impls/in_process.h"

#include <cstdlib>
#include <memory>
#include <utility>

#include "impls/builtins.h"
#include "call/call_layout.h"

namespace attncheck {

uint8_t* InProcessImplementation::Region::at_least(std::size_t bytes) {
  if (bytes > bytes_ || !data_) {
    // Page-aligned, as the plugin host's mapping is: every buffer's address
    // modulo a page is then the layout's and shift_buffers' alone, not the
    // heap's, so a kernel whose path depends on alignment (the zoo's
    // path_by_alignment) is judged the same on every run. aligned_alloc wants
    // a multiple of the alignment.
    constexpr std::size_t kPage = 4096;
    const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
    data_.reset(static_cast<uint8_t*>(std::aligned_alloc(kPage, rounded)));
    bytes_ = data_ ? rounded : 0;
  }
  return data_.get();
}

Outcome InProcessImplementation::run(const Problem& problem) {
  if (backward_needs_lse(problem, features())) {
    Problem with_lse = problem;
    with_lse.lse_requested = true;
    Outcome o = run(with_lse);
    o.lse.clear();
    return o;
  }
  if (std::string why = undeclared_features(problem, features(), kv_formats()); !why.empty())
    return {CallStatus::unsupported, {}, why};
  // A packed problem whose packing does not fit its shape (a call derived from
  // a packed case by a transform that knows nothing of packing) would be laid
  // out past its buffers: never sent, and said to be the checker's.
  if (problem.packed() || problem.paged() || problem.kv_formatted() || problem.v_view_of_k)
    if (std::string bad = problem.inconsistency(); !bad.empty())
      return {CallStatus::unsupported, {}, std::string("not called: the checker built an inconsistent ") +
                                               (problem.paged()          ? "paged"
                                                : problem.packed()       ? "packed"
                                                : problem.kv_formatted() ? "quantized"
                                                                         : "V-view-of-K") +
                                               " call (" + bad + ")"};
  const CallLayout layout = layout_for(problem, forward_v3_ ? 3 : forward_v2_ ? 2 : 1);
  uint8_t* const start = region_.at_least(layout.total + shift_);
  uint8_t* const region = start ? start + shift_ : nullptr;
  if (!region) return {CallStatus::error, {}, "cannot allocate the call's buffers"};
  encode_call(problem, layout, region);
  char err[512] = {0};
  int rc = 0;
  if (!forward_v2_) {
    const attncheck_call call = abi_call(problem, layout, region);
    rc = forward_(&call, err, sizeof err);
    err[sizeof err - 1] = 0;
    return outcome_from_return(rc, err, problem, layout, region);
  }
  const attncheck_call_v3 call3 = abi_call_v3(problem, layout, region);
  const attncheck_call_v2& call = call3.v2;
  rc = forward_v3_ ? forward_v3_(&call3, err, sizeof err) : forward_v2_(&call, err, sizeof err);
  err[sizeof err - 1] = 0;
  Outcome forward = outcome_from_return(rc, err, problem, layout, region);
  if (!problem.is_backward() || !(backward_v2_ || backward_v3_) || forward.status != CallStatus::ok) return forward;
  // A backward problem (declared: a v2 or v3 backward is set): backward on the same
  // region and call, with forward's own out and lse as its inputs.
  const ForwardOutputs before = snapshot_forward_outputs(layout, region);
  const attncheck_grad grad = abi_grad(problem, layout, region);
  char grad_err[512] = {0};
  rc = backward_v3_ ? backward_v3_(&call3, &grad, grad_err, sizeof grad_err)
                     : backward_v2_(&call, &grad, grad_err, sizeof grad_err);
  grad_err[sizeof grad_err - 1] = 0;
  return backward_outcome_from_return(rc, grad_err, problem, layout, region, before, std::move(forward));
}

std::unique_ptr<Implementation> make_builtin(std::string_view name) {
  const BuiltinInfo* info = find_builtin(name);
  if (!info) return nullptr;
  if (info->reset) info->reset();
  if (info->forward_v2) {
    auto impl = std::make_unique<InProcessImplementation>(std::string(info->name), info->forward_v2, info->features,
                                                          info->backward_v2);
    impl->set_promises(info->promises);
    impl->set_kv_formats(info->kv_formats);
    if (info->forward_v3) impl->set_forward_v3(info->forward_v3);
    return impl;
  }
  return std::make_unique<InProcessImplementation>(std::string(info->name), info->forward);
}

}  // namespace attncheck
