#include "problem/problem.h"

#include <algorithm>
#include <sstream>

namespace attncheck {

std::string_view causal_name(Causal c) {
  switch (c) {
    case Causal::none: return "none";
    case Causal::top_left: return "top_left";
    case Causal::bottom_right: return "bottom_right";
  }
  return "?";
}

bool Problem::row_sees_any_key(int64_t bh, int64_t i) const {
  const int64_t end = std::min(causal_key_end(i), shape.kv_len);
  for (int64_t j = 0; j < end; ++j)
    if (mask_allows(bh, i, j)) return true;
  return false;
}

std::string Problem::inconsistency() const {
  const Shape& s = shape;
  if (s.batch < 1 || s.heads < 1 || s.q_len < 1 || s.kv_len < 1 || s.head_dim < 1 || s.value_dim < 1)
    return "every extent (batch, heads, q_len, kv_len, head_dim, value_dim) must be at least 1";
  auto check = [](const char* what, std::size_t got, int64_t want) -> std::string {
    if (static_cast<int64_t>(got) == want) return "";
    std::ostringstream os;
    os << what << " holds " << got << " elements but the shape needs " << want;
    return os.str();
  };
  for (auto msg : {check("q", q.size(), s.q_size()), check("k", k.size(), s.k_size()),
                   check("v", v.size(), s.v_size())})
    if (!msg.empty()) return msg;
  if (!mask.empty()) return check("mask", mask.size(), s.mask_size());
  return "";
}

std::string Problem::header() const {
  std::ostringstream os;
  os << dtype_name(dtype) << " batch=" << shape.batch << " heads=" << shape.heads
     << " q_len=" << shape.q_len << " kv_len=" << shape.kv_len << " head_dim=" << shape.head_dim
     << " value_dim=" << shape.value_dim << " causal=" << causal_name(causal) << " scale=";
  if (std::isnan(scale)) os << "default"; else os << scale;
  os << " mask=" << (mask.empty() ? "none" : "given");
  return os.str();
}

namespace {
void print_tensor(std::ostream& os, const char* name, const std::vector<double>& t,
                  int64_t rows, int64_t cols, std::size_t max_elements) {
  os << "  " << name << " =";
  if (t.size() > max_elements) { os << " (" << t.size() << " elements)\n"; return; }
  os.precision(9);
  for (int64_t r = 0; r < rows; ++r) {
    os << (r == 0 ? " [" : "\n      ") << "[";
    for (int64_t c = 0; c < cols; ++c) os << (c ? ", " : "") << t[r * cols + c];
    os << "]";
  }
  os << "]\n";
}
}  // namespace

std::string Problem::describe(std::size_t max_elements) const {
  std::ostringstream os;
  os << header() << "\n";
  const int64_t bh = shape.batch * shape.heads;
  print_tensor(os, "q", q, bh * shape.q_len, shape.head_dim, max_elements);
  print_tensor(os, "k", k, bh * shape.kv_len, shape.head_dim, max_elements);
  print_tensor(os, "v", v, bh * shape.kv_len, shape.value_dim, max_elements);
  if (!mask.empty()) {
    std::vector<double> m(mask.begin(), mask.end());
    print_tensor(os, "mask", m, bh * shape.q_len, shape.kv_len, max_elements);
  }
  return os.str();
}

Problem make_problem(DType dtype, const Shape& shape, Causal causal, double scale) {
  Problem p;
  p.dtype = dtype;
  p.shape = shape;
  p.causal = causal;
  p.scale = scale;
  p.q.assign(shape.q_size(), 0.0);
  p.k.assign(shape.k_size(), 0.0);
  p.v.assign(shape.v_size(), 0.0);
  return p;
}

void round_tensors(Problem& p) {
  for (auto* t : {&p.q, &p.k, &p.v})
    for (double& x : *t) x = round_to(p.dtype, x);
}

}  // namespace attncheck
