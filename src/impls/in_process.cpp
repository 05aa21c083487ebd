#include "impls/in_process.h"

#include <cstdlib>
#include <memory>

#include "impls/builtins.h"
#include "problem/call_layout.h"

namespace attncheck {

Outcome InProcessImplementation::run(const Problem& problem) {
  const CallLayout layout = layout_for(problem);
  struct Free { void operator()(uint8_t* p) const { std::free(p); } };
  std::unique_ptr<uint8_t, Free> region(static_cast<uint8_t*>(std::aligned_alloc(CallLayout::kAlign, layout.total)));
  if (!region) return {CallStatus::error, {}, "cannot allocate the call's buffers"};
  encode_call(problem, layout, region.get());
  const attncheck_call call = abi_call(problem, layout, region.get());
  char err[512] = {0};
  const int rc = forward_(&call, err, sizeof err);
  err[sizeof err - 1] = 0;
  return outcome_from_return(rc, err, problem, layout, region.get());
}

std::unique_ptr<Implementation> make_builtin(std::string_view name) {
  const BuiltinInfo* info = find_builtin(name);
  if (!info) return nullptr;
  if (info->reset) info->reset();
  return std::make_unique<InProcessImplementation>(std::string(info->name), info->forward);
}

}  // namespace attncheck
