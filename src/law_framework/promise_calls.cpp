#include "law_framework/promise_calls.h"

#include <limits>

#include "problem/dtype.h"

namespace attncheck {

namespace {

// The n-th replacement of a dead element.
double dead_value(DType t, uint64_t n) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (n % 5) {
    case 0: return std::numeric_limits<double>::quiet_NaN();
    case 1: return inf;
    case 2: return -inf;
    case 3: return max_finite(t);
    default: return -max_finite(t);
  }
}

// Calls `at(flat)` for every element of the padding rows (i >= Lq) of a
// [batch][heads][rows][dim] tensor, or of its padding keys when `keys`.
template <class F>
void each_dead_element(const Problem& p, int64_t heads, int64_t rows, int64_t dim, bool keys, F&& at) {
  for (int64_t b = 0; b < p.shape.batch; ++b) {
    const int64_t live = keys ? p.kv_len_of(b) : p.q_len_of(b);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = live; r < rows; ++r)
        for (int64_t c = 0; c < dim; ++c) at(((b * heads + h) * rows + r) * dim + c);
  }
}

}  // namespace

bool has_dead_elements(const Problem& p) {
  for (int64_t b = 0; b < p.shape.batch; ++b)
    if (p.q_len_of(b) < p.shape.q_len || p.kv_len_of(b) < p.shape.kv_len) return true;
  return false;
}

Problem with_dead_bytes_changed(const Problem& p) {
  Problem r = p;
  const Shape& s = p.shape;
  uint64_t n = 0;
  auto change = [&](std::vector<double>& xs) {
    return [&xs, &n, t = p.dtype](int64_t flat) { xs[static_cast<std::size_t>(flat)] = dead_value(t, n++); };
  };
  each_dead_element(p, s.heads, s.q_len, s.head_dim, false, change(r.q));
  each_dead_element(p, s.kv_head_count(), s.kv_len, s.head_dim, true, change(r.k));
  each_dead_element(p, s.kv_head_count(), s.kv_len, s.value_dim, true, change(r.v));
  if (p.is_backward()) each_dead_element(p, s.heads, s.q_len, s.value_dim, false, change(r.dout));
  return r;
}

std::size_t moved_buffers_shift(uint64_t salt) { return 64 * (1 + static_cast<std::size_t>(salt % 127)); }

Outcome run_with_buffers_moved(Implementation& impl, const Problem& p, std::size_t shift) {
  if (!impl.shift_buffers(shift))
    return {CallStatus::unsupported, {}, "not called: " + impl.name() + " cannot place its buffers elsewhere"};
  Outcome o = impl.run(p);
  impl.shift_buffers(0);
  return o;
}

std::string moved_call_text(const Problem& p, std::size_t shift) {
  std::string t = "with its buffers " + std::to_string(shift) + " bytes further";
  if (has_dead_elements(p)) t += " and its padding rows and keys changed (NaN, infinities, the largest values)";
  return t;
}

}  // namespace attncheck
