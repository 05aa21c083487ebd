#include "law_framework/kv_layout_faults.h"

#include <functional>

#include "oracle/oracle.h"
#include "problem/kv_format.h"
#include "problem/kv_scale.h"

namespace attncheck {

namespace {

struct KvLayoutFault {
  const char* name;
  bool (*applies)(KvFormat f, int64_t channels);
  // Channel c's faulty value of one row (x: the row's real values, code_of(c) = x[c] / its
  // scale, scale_of(c) its scale; 1 for the block formats, whose d is one per 32 channels).
  double (*read)(const double* x, int64_t c, const std::function<double(int64_t)>& scale_of);
};

double kv_fault_code(const double* x, int64_t c, const std::function<double(int64_t)>& scale_of) {
  return x[c] / scale_of(c);
}

constexpr KvLayoutFault kKvLayoutFaults[] = {
    {"scales ignored (each code read times 1)",
     [](KvFormat f, int64_t) { return info(f).scaled; },
     [](const double* x, int64_t c, const std::function<double(int64_t)>& s) { return kv_fault_code(x, c, s); }},
    {"nibbles read as pairs (channel 2i low, 2i+1 high: INT4's layout)",
     [](KvFormat f, int64_t) { return f == KvFormat::q4_0; },
     [](const double* x, int64_t c, const std::function<double(int64_t)>&) {
       const int64_t m = c / 32, j = c % 32;  // pairs: byte j/2 holds channel j (even: low) of the halves' j/2 or 16 + j/2
       return x[32 * m + (j % 2 == 0 ? j / 2 : 16 + j / 2)];
     }},
    {"nibbles read as halves (Q4_0's layout, by 32 channels)",
     [](KvFormat f, int64_t channels) { return f == KvFormat::int4 && channels % 32 == 0; },
     [](const double* x, int64_t c, const std::function<double(int64_t)>& s) {
       const int64_t m = c / 32, j = c % 32;  // halves: channel j from byte j % 16, low when j < 16
       const int64_t src = 32 * m + (j < 16 ? 2 * j : 2 * (j - 16) + 1);
       return kv_fault_code(x, src, s) * s(c);
     }},
    {"read as FNUZ (bias 8: half the value)",
     [](KvFormat f, int64_t) { return f == KvFormat::fp8_e4m3; },
     [](const double* x, int64_t c, const std::function<double(int64_t)>&) { return x[c] / 2; }},
};

// p with one side's live real values as `fault` reads them.
Problem kv_faulty_reading(const Problem& p, bool is_k, const KvLayoutFault& fault) {
  Problem q = p;
  const Shape& s = p.shape;
  const int64_t kvh = s.kv_head_count(), cols = is_k ? s.head_dim : s.value_dim;
  const std::vector<double>& real = is_k ? p.k : p.v;
  std::vector<double>& into = is_k ? q.k : q.v;
  const std::vector<float> scales((is_k ? p.k_scales : p.v_scales).begin(), (is_k ? p.k_scales : p.v_scales).end());
  const KvFormat f = is_k ? p.k_format : p.v_format;
  KvScale view;
  if (info(f).scaled) {
    view.data = scales.data();
    const std::array<int64_t, 3> st =
        scale_strides(is_k ? p.k_scale_granularity : p.v_scale_granularity, kvh, cols);
    for (int a = 0; a < 3; ++a) view.stride[a] = st[a];
  }
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < kvh; ++h) {
      const std::function<double(int64_t)> scale_of = [&](int64_t c) {
        return view.data ? scale_at(view, b, h, c) : 1.0;
      };
      for (int64_t j = 0; j < p.kv_len_of(b); ++j) {
        const int64_t row = ((b * kvh + h) * s.kv_len + j) * cols;
        for (int64_t c = 0; c < cols; ++c) into[row + c] = fault.read(real.data() + row, c, scale_of);
      }
    }
  return q;
}

}  // namespace

std::string explain_kv_layout_fault(const Problem& p, const std::vector<double>& out) {
  for (const bool is_k : {true, false}) {
    const KvFormat f = is_k ? p.k_format : p.v_format;
    if (f == KvFormat::dtype) continue;
    for (const KvLayoutFault& fault : kKvLayoutFaults) {
      if (!fault.applies(f, is_k ? p.shape.head_dim : p.shape.value_dim)) continue;
      const Problem faulty = kv_faulty_reading(p, is_k, fault);
      if (faulty == p) continue;  // the fault changes nothing here: explains nothing
      const OracleResult o = oracle(faulty);
      const Comparison c = compare_to_oracle(faulty, o, out);
      if (c.judged > 0 && c.ok)
        return std::string("explained by ") + (is_k ? "K's " : "V's ") + std::string(kv_format_name(f)) + " " + fault.name +
               ": the output is within the bound of attention over the values so read";
    }
  }
  return "";
}

}  // namespace attncheck
