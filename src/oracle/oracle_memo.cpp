#include "oracle/oracle_memo.h"

#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace attncheck::oracle_detail {

namespace {

template <class T> void put(std::string& key, const T& x) { key.append(reinterpret_cast<const char*>(&x), sizeof x); }
template <class T> void put(std::string& key, const std::vector<T>& v) {
  put(key, v.size());
  key.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::size_t result_bytes(const OracleResult& r) {
  return (r.exact.size() + r.bound.size() + r.entropy.size() + r.lse_exact.size() + r.lse_bound.size()) *
             sizeof(double) +
         r.row_in_domain.size();
}

struct Memo {
  std::mutex lock;
  std::unordered_map<std::string, OracleResult> results;
  std::deque<const std::string*> order;  // oldest first; points at the map's own keys
  std::size_t bytes = 0;
  MemoCounts counts;
};

Memo& memo() {
  static Memo* m = new Memo;  // never destroyed: no order-of-destruction question at exit
  return *m;
}

}  // namespace

std::optional<std::string> memo_key(const Problem& p) {
  const std::size_t tensors = (p.q.size() + p.k.size() + p.v.size() + p.bias.size()) * sizeof(double) + p.mask.size();
  if (tensors > kMaxKeyBytes) return std::nullopt;
  std::string key;
  key.reserve(tensors + 256);
  const Shape& s = p.shape;
  for (int64_t e : {s.batch, s.heads, s.q_len, s.kv_len, s.head_dim, s.value_dim, s.kv_head_count()}) put(key, e);
  put(key, static_cast<int>(p.dtype));
  put(key, static_cast<int>(p.causal));
  put(key, p.scale);
  put(key, p.window_left);
  put(key, p.window_right);
  put(key, p.softcap);
  for (const Broadcast& b : {p.mask_broadcast, p.bias_broadcast})
    put(key, static_cast<int>(b.per_batch) | static_cast<int>(b.per_head) << 1 | static_cast<int>(b.per_row) << 2);
  put(key, p.q);
  put(key, p.k);
  put(key, p.v);
  put(key, p.mask);
  put(key, p.bias);
  put(key, p.q_lens);
  put(key, p.kv_lens);
  put(key, p.alibi_slopes);
  put(key, p.sinks);
  return key;
}

std::optional<OracleResult> memo_find(const std::string& key) {
  Memo& m = memo();
  std::lock_guard<std::mutex> hold(m.lock);
  const auto it = m.results.find(key);
  if (it == m.results.end()) {
    ++m.counts.misses;
    return std::nullopt;
  }
  ++m.counts.hits;
  return it->second;
}

void memo_keep(std::string key, const OracleResult& r) {
  Memo& m = memo();
  const std::size_t bytes = key.size() + result_bytes(r);
  if (bytes > kMaxBytes) return;
  std::lock_guard<std::mutex> hold(m.lock);
  const auto [it, added] = m.results.try_emplace(std::move(key), r);
  if (!added) return;  // another thread kept it first
  m.order.push_back(&it->first);
  m.bytes += bytes;
  while (m.bytes > kMaxBytes) {
    const auto oldest = m.results.find(*m.order.front());
    m.bytes -= oldest->first.size() + result_bytes(oldest->second);
    m.order.pop_front();
    m.results.erase(oldest);
  }
}

MemoCounts memo_counts() {
  Memo& m = memo();
  std::lock_guard<std::mutex> hold(m.lock);
  return m.counts;
}

}  // namespace attncheck::oracle_detail
