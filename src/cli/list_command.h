// `attncheck list`: the built-in implementations and the laws, one line each.
#pragma once

#include <ostream>

namespace attncheck {

// Returns the exit status (0).
int run_list(std::ostream& out);

}  // namespace attncheck
