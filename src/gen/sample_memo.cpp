#include "gen/sample_memo.h"

#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "gen/gen_options_fields.h"
#include "gen/generators.h"
#include "problem/problem_fields.h"

namespace attncheck {

namespace {

class KeyWriter {
 public:
  KeyWriter() { bytes_.reserve(512); }  // a GenOptions with a few domains: one allocation
  template <class T> void put(const T& x) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&x), sizeof x);
  }
  void put_text(std::string_view s) {
    put(s.size());
    bytes_.append(s);
  }
  // Every field of a record with a list (gen_options_fields.h), a list's
  // length and its elements, a name's text, any other value's bytes.
  template <class T> void put_value(const T& x) {
    if constexpr (HasFields<T>) {
      for_each_field<T>([this](const auto&, const auto& member) { put_value(member); }, x);
    } else if constexpr (std::is_same_v<T, const char*>) {
      put_text(x ? std::string_view(x) : std::string_view());
    } else if constexpr (is_vector<T>) {
      put(x.size());
      for (const auto& e : x) put_value(e);
    } else {
      put(x);
    }
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

// What a kept problem holds: the record and every list's elements.
std::size_t problem_bytes(const Problem& p) {
  std::size_t bytes = sizeof p;
  for_each_field<Problem>(
      [&](const auto&, const auto& member) {
        if constexpr (is_vector<std::remove_cvref_t<decltype(member)>>) bytes += member.size() * sizeof(*member.data());
      },
      p);
  return bytes;
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
  w.put_value(o);
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
