#include "run/target.h"

#include "impls/in_process.h"

namespace attncheck {

ImplementationFactory builtin_factory(const std::string& name) {
  return [name](std::string& error) {
    std::unique_ptr<Implementation> impl = make_builtin(name);
    if (!impl) error = "unknown implementation '" + name + "'";
    return impl;
  };
}

std::optional<ProcessFault> TargetProbes::fault() const {
  const char* where = "the probe of dtypes and shapes (before the laws ran)";
  if (dtypes.fault_case) return ProcessFault{dtypes.fault_status, *dtypes.fault_case, dtypes.fault_message, where};
  if (shapes.fault_case) return ProcessFault{shapes.fault_status, *shapes.fault_case, shapes.fault_message, where};
  return std::nullopt;
}

}  // namespace attncheck
