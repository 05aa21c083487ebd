#include "oracle/oracle_memo.h"

#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <type_traits>
#include <unordered_map>

#include "problem/problem_fields.h"

namespace attncheck::oracle_detail {

namespace {

template <class T> void put(std::string& key, const T& x) {
  static_assert(std::is_trivially_copyable_v<T>);
  key.append(reinterpret_cast<const char*>(&x), sizeof x);
}
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

// The fields of the list (problem/problem_fields.h) that the oracle reads,
// in its order: each scalar's and record's bytes, each list's length and bytes.
std::optional<std::string> memo_key(const Problem& p) {
  std::size_t lists = 0;
  for_each_leaf<Problem>(
      [&](const auto& f, const auto& x) {
        if constexpr (is_vector<std::remove_cvref_t<decltype(x)>>)
          if (f.attrs.oracle) lists += x.size() * sizeof(x[0]);
      },
      p);
  if (lists > kMaxKeyBytes) return std::nullopt;
  std::string key;
  key.reserve(lists + 256);
  for_each_leaf<Problem>(
      [&](const auto& f, const auto& x) {
        if (f.attrs.oracle) put(key, x);
      },
      p);
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
