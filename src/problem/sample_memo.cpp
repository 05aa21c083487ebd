#include "problem/sample_memo.h"

#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "problem/generators.h"

namespace attncheck {

namespace {

// A field added to GenOptions or ShapeDomain must be added to the key below
// (a key that misses a field would hand one options' problems to another):
// these sizes (of the 64-bit targets attncheck is built for) fail to compile until it is.
static_assert(sizeof(void*) != 8 || sizeof(GenOptions) == 216, "a GenOptions field changed: add it to gen_options_key");
static_assert(sizeof(void*) != 8 || sizeof(ShapeDomain) == 72, "a ShapeDomain field changed: add it to gen_options_key");

class KeyWriter {
 public:
  template <class T> void put(const T& x) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&x), sizeof x);
  }
  void put_text(std::string_view s) {
    put(s.size());
    bytes_.append(s);
  }
  template <class T> void put_all(const std::vector<T>& v) {
    put(v.size());
    for (const T& x : v) put(x);
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

std::size_t problem_bytes(const Problem& p) {
  return sizeof p + sizeof(double) * (p.q.size() + p.k.size() + p.v.size() + p.bias.size() + p.alibi_slopes.size() +
                                      p.sinks.size() + p.dout.size()) +
         p.mask.size() + sizeof(int32_t) * (p.q_lens.size() + p.kv_lens.size());
}

struct Memo {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const Problem>> kept;
  std::deque<std::pair<std::string, std::size_t>> order;  // keys, oldest first, with their problems' bytes
  std::size_t bytes = 0;
  SampleMemoCounts counts;
};

Memo& memo() {
  static Memo m;
  return m;
}

}  // namespace

std::string gen_options_key(const GenOptions& o) {
  KeyWriter w;
  w.put_all(o.dtypes);
  for (int64_t x : {o.min_batch, o.max_batch, o.min_heads, o.max_heads, o.min_q_len, o.max_q_len, o.min_kv_len,
                    o.max_kv_len, o.min_head_dim, o.max_head_dim, o.max_value_dim, o.q_len_multiple,
                    o.kv_len_multiple})
    w.put(x);
  for (bool b : {o.same_dims, o.causal, o.mask, o.explicit_scale}) w.put(b);
  w.put(o.features);
  w.put(o.required);
  w.put(o.families);
  w.put(o.size_factor);
  w.put(o.kernel_head_dim_chance);
  w.put_all(o.head_dims);
  w.put(o.domains.size());
  for (const ShapeDomain& d : o.domains) {
    w.put_text(d.name ? std::string_view(d.name) : std::string_view());
    w.put(d.weight);
    for (int64_t x : {d.max_batch, d.max_heads, d.min_q_len, d.max_q_len, d.min_kv_len, d.max_kv_len}) w.put(x);
    for (bool b : {d.q_equals_kv, d.q_below_kv, d.ramped, d.masks}) w.put(b);
  }
  return w.take();
}

std::shared_ptr<const Problem> sample_problem_shared(const GenOptions& options, const std::string& options_key,
                                                     uint64_t seed, int size) {
  std::string key = options_key;
  key.append(reinterpret_cast<const char*>(&seed), sizeof seed);
  key.append(reinterpret_cast<const char*>(&size), sizeof size);
  Memo& m = memo();
  {
    const std::lock_guard<std::mutex> lock(m.mutex);
    if (const auto it = m.kept.find(key); it != m.kept.end()) {
      ++m.counts.hits;
      return it->second;
    }
    ++m.counts.misses;
  }
  auto p = std::make_shared<const Problem>(sample_problem(options, seed, size));  // drawn outside the lock
  const std::size_t bytes = problem_bytes(*p);
  if (bytes > kMaxSampleBytes) return p;
  const std::lock_guard<std::mutex> lock(m.mutex);
  if (!m.kept.emplace(key, p).second) return p;  // another thread kept it meanwhile
  m.order.emplace_back(std::move(key), bytes);
  m.bytes += bytes;
  while (m.bytes > kMaxSampleMemoBytes) {
    m.bytes -= m.order.front().second;
    m.kept.erase(m.order.front().first);
    m.order.pop_front();
  }
  return p;
}

SampleMemoCounts sample_memo_counts() {
  Memo& m = memo();
  const std::lock_guard<std::mutex> lock(m.mutex);
  return m.counts;
}

}  // namespace attncheck
