#include <sys/resource.h>

#include "bench_shapes.h"

namespace attncheck::bench {

double max_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace attncheck::bench
