// A v2 plugin opened with dlopen, and what its direct tests share: the test seed, the
// value grid, a Case of a given shape, and one call checked against the spec
// (v2_test_call.h). Used by example_v2_plugin_test and torch_v2_adapter_test.
#ifndef ATTNCHECK_TESTS_V2_TEST_PLUGIN_H
#define ATTNCHECK_TESTS_V2_TEST_PLUGIN_H

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "driver/seed_env.h"
#include "v2_test_call.h"

namespace v2test {

// ATTNCHECK_SEED from the environment (default 20261130), printed once.
inline uint32_t seed() {
  static const uint32_t s = [] {
    // (the low 32 bits of the seed: what std::mt19937 takes)
    const uint32_t v = static_cast<uint32_t>(attncheck::seed_from_env_or(20261130u));
    std::printf("ATTNCHECK_SEED=%u\n", v);
    return v;
  }();
  return s;
}

// The plugin at `path`, with both of its entry points (nullptr where absent).
struct LoadedPlugin {
  void* handle = nullptr;
  const attncheck_impl_v2* v2 = nullptr;
  const attncheck_impl* v1 = nullptr;
  std::string error;  // dlerror() when it did not load
  explicit LoadedPlugin(const char* path) {
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      error = dlerror();
      return;
    }
    if (auto f = reinterpret_cast<const attncheck_impl_v2* (*)()>(dlsym(handle, "attncheck_plugin_v2"))) v2 = f();
    if (auto f = reinterpret_cast<const attncheck_impl* (*)()>(dlsym(handle, "attncheck_plugin_v1"))) v1 = f();
  }
  ~LoadedPlugin() {
    if (handle) dlclose(handle);
  }
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;
};

// Values on a grid every dtype holds exactly: k * unit for |k| <= range, by default
// k/32 in [-2, 2].
inline double grid(std::mt19937& rng, int range = 64, double unit = 1.0 / 32) {
  return std::uniform_int_distribution<int>(-range, range)(rng) * unit;
}

// A case of the given shape with q, k, v drawn from the grid; nothing else set.
inline Case shaped(attncheck_dtype t, int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len, int64_t kv_len,
                   int64_t head_dim, int64_t value_dim, uint32_t salt = 0) {
  std::mt19937 rng(seed() + salt);
  Case c;
  c.dtype = t;
  c.batch = batch, c.heads = heads, c.kv_heads = kv_heads, c.q_len = q_len, c.kv_len = kv_len;
  c.head_dim = head_dim, c.value_dim = value_dim;
  c.q.resize(static_cast<size_t>(batch * heads * q_len * head_dim));
  c.k.resize(static_cast<size_t>(batch * kv_heads * kv_len * head_dim));
  c.v.resize(static_cast<size_t>(batch * kv_heads * kv_len * value_dim));
  for (auto* tensor : {&c.q, &c.k, &c.v})
    for (double& x : *tensor) x = grid(rng);
  return c;
}

// Calls `impl` on c, encoded into e; returns the mismatches with the spec (empty when
// all is well; `slack` as in check_written). The inputs must come back unchanged too.
inline std::string run_on(const attncheck_impl_v2& impl, const Case& c, Encoded& e, double slack = 0) {
  encode_call(c, e);
  if (!e.exact) return "test error: a value does not fit the dtype";
  const auto q0 = e.q.bytes, k0 = e.k.bytes, v0 = e.v.bytes;
  char err[256] = "";
  const int rc = impl.forward(&e.call, err, sizeof err);
  if (rc != ATTNCHECK_OK) return "forward returned " + std::to_string(rc) + ": " + err;
  if (e.q.bytes != q0 || e.k.bytes != k0 || e.v.bytes != v0) return "an input was written";
  return check_written(c, e, expected_of(c), slack);
}

inline std::string name_of(attncheck_dtype t) {
  switch (t) {
    case ATTNCHECK_F32: return "f32";
    case ATTNCHECK_F64: return "f64";
    case ATTNCHECK_F16: return "f16";
    case ATTNCHECK_BF16: return "bf16";
  }
  return "?";
}

}  // namespace v2test

#endif
