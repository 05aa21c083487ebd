#include "hand_built_grad_call.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace attncheck::testing_v2 {
namespace {

// As hand_built_v2_call.cpp lays out q, k, v and out.
v2test::Layout as_layout(const Layout& l) {
  v2test::Layout out;
  if (l.bshd) {
    out.order = {0, 2, 1, 3};
    out.gap = {l.batch_gap, l.row_gap, l.head_gap};
  } else {
    out.gap = {l.batch_gap, l.head_gap, l.row_gap};
  }
  out.lead = l.row_gap + l.head_gap > 0 ? 2 : 0;  // room before and after the view, guarded too
  return out;
}

void view_of(v2test::Placed& p, attncheck_out_view& v) {
  v.data = p.first();
  std::copy(std::begin(p.stride), std::end(p.stride), v.stride);
}

// Live extents of one gradient: rows (q_len, Lq) for dq, keys (kv_len, Lk) for dk and dv.
struct GradShape {
  v2test::Placed* placed;
  std::vector<double>* dense;
  int64_t heads, rows, cols;
  bool by_keys;
};

double loss(const v2test::Case& c, const std::vector<double>& dout) {
  const v2test::Expected e = v2test::expected_of(c);
  long double sum = 0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.lq(b); ++i)
        for (int64_t col = 0; col < c.value_dim; ++col) {
          const std::size_t n = static_cast<std::size_t>(((b * c.heads + h) * c.q_len + i) * c.value_dim + col);
          sum += static_cast<long double>(e.out[n]) * dout[n];
        }
  return static_cast<double>(sum);
}

std::vector<double>& tensor_of(v2test::Case& c, char tensor) {
  return tensor == 'q' ? c.q : tensor == 'k' ? c.k : c.v;
}

}  // namespace

GradCall make_grad_call(const CallSpec& spec, const GradLayouts& layouts, std::mt19937_64& rng) {
  GradCall t(make_test_call(spec, rng));
  const v2test::Case& c = t.fwd.logical;
  const attncheck_dtype dt = c.dtype;
  const std::size_t es = v2test::element_size(dt);
  const DTypeInfo& di = info(spec.dtype);
  std::uniform_real_distribution<double> unit(-1, 1);
  t.dout.assign(static_cast<std::size_t>(c.batch * c.heads * c.q_len * c.value_dim), kNaN);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.q_len; ++i)
        for (int64_t col = 0; col < c.value_dim; ++col) {
          unsigned char bits[8];
          di.encode(unit(rng), bits);
          if (i < c.lq(b)) t.dout[static_cast<std::size_t>(((b * c.heads + h) * c.q_len + i) * c.value_dim + col)] = di.decode(bits);
        }
  t.dout_p = v2test::place(as_layout(layouts.dout), {c.batch, c.heads, c.q_len, c.value_dim}, es);
  v2test::fill_nan(t.dout_p, dt);
  bool exact = true;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.lq(b); ++i)
        for (int64_t col = 0; col < c.value_dim; ++col)
          v2test::encode(dt, t.dout[static_cast<std::size_t>(((b * c.heads + h) * c.q_len + i) * c.value_dim + col)],
                         t.dout_p.at(b, h, i, col), exact);
  if (!exact) throw std::logic_error("make_grad_call: a dout value does not fit the dtype");
  t.dq_p = v2test::place(as_layout(layouts.dq), {c.batch, c.heads, c.q_len, c.head_dim}, es);
  t.dk_p = v2test::place(as_layout(layouts.dk), {c.batch, c.kv_heads, c.kv_len, c.head_dim}, es);
  t.dv_p = v2test::place(as_layout(layouts.dv), {c.batch, c.kv_heads, c.kv_len, c.value_dim}, es);
  t.grad.dout.data = t.dout_p.first();
  std::copy(std::begin(t.dout_p.stride), std::end(t.dout_p.stride), t.grad.dout.stride);
  view_of(t.dq_p, t.grad.dq);
  view_of(t.dk_p, t.grad.dk);
  view_of(t.dv_p, t.grad.dv);
  return t;
}

Grads run_forward_backward(GradCall& t, ForwardV2 forward, BackwardV2 backward, const double* garbage) {
  Grads g;
  std::ostringstream problems;
  const v2test::Case& c = t.fwd.logical;
  v2test::Encoded& e = t.fwd.enc;
  char err[256] = {0};
  t.fwd.reset_outputs();
  if (const int rc = forward(&e.call, err, sizeof err); rc != ATTNCHECK_OK) {
    g.problems = "forward returned " + std::to_string(rc) + ": " + err;
    return g;
  }
  GradShape shapes[] = {{&t.dq_p, &g.dq, c.heads, c.q_len, c.head_dim, false},
                        {&t.dk_p, &g.dk, c.kv_heads, c.kv_len, c.head_dim, true},
                        {&t.dv_p, &g.dv, c.kv_heads, c.kv_len, c.value_dim, true}};
  const char* names[] = {"dq", "dk", "dv"};
  const auto live_of = [&](const GradShape& s, int64_t b) { return s.by_keys ? c.lk(b) : c.lq(b); };
  for (GradShape& s : shapes) {
    std::fill(s.placed->bytes.begin(), s.placed->bytes.end(), v2test::kOutputPoison);
    if (!garbage) continue;
    bool exact = true;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < s.heads; ++h)
        for (int64_t r = 0; r < live_of(s, b); ++r)
          for (int64_t col = 0; col < s.cols; ++col) v2test::encode(c.dtype, *garbage, s.placed->at(b, h, r, col), exact);
  }
  // Everything backward must leave as it is.
  const auto inputs = [&] {
    std::vector<std::vector<unsigned char>> all = {e.q.bytes, e.k.bytes, e.v.bytes, e.mask.bytes,
                                                   e.bias.bytes, e.out.bytes, t.dout_p.bytes};
    const auto* lse = reinterpret_cast<const unsigned char*>(e.lse.data());
    all.emplace_back(lse, lse + e.lse.size() * sizeof(float));
    return all;
  };
  const auto before = inputs();
  if (const int rc = backward(&e.call, &t.grad, err, sizeof err); rc != ATTNCHECK_OK) {
    g.problems = "backward returned " + std::to_string(rc) + ": " + err;
    return g;
  }
  const char* input_names[] = {"q", "k", "v", "mask", "bias", "out", "dout", "lse"};
  const auto after = inputs();
  for (std::size_t n = 0; n < before.size(); ++n)
    if (before[n] != after[n]) problems << "backward changed " << input_names[n] << "\n";

  for (int which = 0; which < 3; ++which) {
    GradShape& s = shapes[which];
    s.dense->assign(static_cast<std::size_t>(c.batch * s.heads * s.rows * s.cols), kNaN);
    std::vector<bool> live(s.placed->bytes.size() / s.placed->elem, false);
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < s.heads; ++h)
        for (int64_t r = 0; r < live_of(s, b); ++r)
          for (int64_t col = 0; col < s.cols; ++col) {
            live[static_cast<std::size_t>(s.placed->lead + s.placed->offset(b, h, r, col))] = true;
            (*s.dense)[static_cast<std::size_t>(((b * s.heads + h) * s.rows + r) * s.cols + col)] =
                v2test::decode(c.dtype, s.placed->at(b, h, r, col));
          }
    int64_t written = 0;
    for (std::size_t el = 0; el < live.size(); ++el) {
      if (live[el]) continue;
      for (std::size_t byte = 0; byte < s.placed->elem; ++byte)
        if (s.placed->bytes[el * s.placed->elem + byte] != v2test::kOutputPoison) {
          if (written++ == 0) problems << names[which] << ": element " << el << " of the allocation is not live and was written\n";
          break;
        }
    }
    if (written > 1) problems << names[which] << ": " << written << " non-live elements written in all\n";
  }
  g.problems = problems.str();
  return g;
}

Grads central_differences(const GradCall& t, double h) {
  Grads g;
  v2test::Case c = t.fwd.logical;
  struct Target { char tensor; std::vector<double>* dense; int64_t heads, rows, cols; bool by_keys; };
  const Target targets[] = {{'q', &g.dq, c.heads, c.q_len, c.head_dim, false},
                            {'k', &g.dk, c.kv_heads, c.kv_len, c.head_dim, true},
                            {'v', &g.dv, c.kv_heads, c.kv_len, c.value_dim, true}};
  for (const Target& target : targets) {
    std::vector<double>& x = tensor_of(c, target.tensor);
    target.dense->assign(x.size(), kNaN);
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t hh = 0; hh < target.heads; ++hh)
        for (int64_t r = 0; r < (target.by_keys ? c.lk(b) : c.lq(b)); ++r)
          for (int64_t col = 0; col < target.cols; ++col) {
            const std::size_t n = static_cast<std::size_t>(((b * target.heads + hh) * target.rows + r) * target.cols + col);
            const double x0 = x[n];
            x[n] = x0 + h;
            const double up = loss(c, t.dout);
            x[n] = x0 - h;
            const double down = loss(c, t.dout);
            x[n] = x0;
            (*target.dense)[n] = (up - down) / (2 * h);
          }
  }
  return g;
}

double directional_difference(const GradCall& t, char tensor, const std::vector<double>& dir, double h) {
  v2test::Case c = t.fwd.logical;
  std::vector<double>& x = tensor_of(c, tensor);
  const std::vector<double> x0 = x;
  // Padding holds NaN in x and 0 in dir: NaN + 0 stays NaN, as padding must.
  for (std::size_t n = 0; n < x.size(); ++n) x[n] = x0[n] + h * dir[n];
  const double up = loss(c, t.dout);
  for (std::size_t n = 0; n < x.size(); ++n) x[n] = x0[n] - h * dir[n];
  const double down = loss(c, t.dout);
  return (up - down) / (2 * h);
}

}  // namespace attncheck::testing_v2
