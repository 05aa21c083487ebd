#include "run/dtype_probe.h"

namespace attncheck {
namespace {

// A small, well-conditioned call: q [1][1][q_len][d], k/v [1][1][kv_len][d]
// filled with -1, 0, 1, no causal rule, no mask, the default scale. Two keys
// first: as few as still make a softmax, so a plugin that faults on longer
// rows still answers.
Problem probe_problem(DType dtype, int64_t q_len, int64_t kv_len, int64_t d) {
  Shape s;
  s.q_len = q_len;
  s.kv_len = kv_len;
  s.head_dim = s.value_dim = d;
  Problem p = make_problem(dtype, s);
  for (std::size_t i = 0; i < p.q.size(); ++i) p.q[i] = static_cast<double>(i % 3) - 1;
  for (std::size_t i = 0; i < p.k.size(); ++i) p.k[i] = static_cast<double>((i + 1) % 3) - 1;
  for (std::size_t i = 0; i < p.v.size(); ++i) p.v[i] = static_cast<double>((i + 2) % 3) - 1;
  return p;
}

}  // namespace

std::string describe(const DroppedDType& d) {
  return std::string(dtype_name(d.dtype)) + " dropped: every probe call answered ATTNCHECK_UNSUPPORTED (" +
         (d.message.empty() ? "no reason given" : d.message) + ")";
}

DTypeProbe probe_dtypes(Implementation& impl, const std::vector<DType>& requested) {
  // Head sizes from the tiniest to the ones fixed-size kernels are built for.
  // Several query lengths too: a decode kernel takes q_len = 1 only.
  static constexpr int64_t kHeadDims[] = {2, 8, 16, 32, 64, 80, 96, 128, 160, 192, 256};
  DTypeProbe probe;
  for (DType t : requested) {
    std::string last_message;
    bool offered = false;
    // And several key lengths, after the shortest: a kernel compiled for one.
    for (int64_t kv_len : {2, 16, 64, 128})
      for (int64_t q_len : {4, 1})
        for (int64_t d : kHeadDims) {
          if (offered) break;
          const Problem call = probe_problem(t, q_len, kv_len, d);
          const Outcome o = impl.run(call);
          if (is_process_fault(o.status) && !probe.fault_case) {
            probe.fault_case = call;
            probe.fault_status = o.status;
            probe.fault_message = std::string(call_status_name(o.status)) + ": " + o.message;
          }
          if (o.status != CallStatus::unsupported) offered = true;
          else last_message = o.message;
        }
    if (offered)
      probe.supported.push_back(t);
    else
      probe.dropped.push_back({t, last_message});
  }
  return probe;
}

}  // namespace attncheck
