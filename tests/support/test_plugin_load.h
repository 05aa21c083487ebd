// Loading the test plugins of tests/plugins/ by their short names, for the host's
// tests of each ABI version: "<prefix>_<name>_plugin.so" in ATTNCHECK_TEST_PLUGIN_DIR
// (e.g. prefix "v3", name "echo": v3_echo_plugin.so).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "host/plugin_host.h"

#ifndef ATTNCHECK_TEST_PLUGIN_DIR
#error "ATTNCHECK_TEST_PLUGIN_DIR must name the folder of the test plugins"
#endif

namespace attncheck::test {

inline std::string test_plugin_path(const std::string& prefix, const std::string& name) {
  return std::string(ATTNCHECK_TEST_PLUGIN_DIR) + "/" + prefix + "_" + name + "_plugin.so";
}

// The plugin loaded; a load that fails is a test failure that shows the host's error.
inline std::unique_ptr<Implementation> load_test_plugin(const std::string& prefix, const std::string& name) {
  std::string error;
  auto impl = load_plugin(test_plugin_path(prefix, name), {}, error);
  EXPECT_TRUE(impl) << error;
  return impl;
}

// The host's error for a plugin it must refuse; a load that succeeds is a test failure.
inline std::string test_plugin_refusal(const std::string& prefix, const std::string& name) {
  std::string error;
  auto impl = load_plugin(test_plugin_path(prefix, name), {}, error);
  EXPECT_FALSE(impl) << name;
  return error;
}

}  // namespace attncheck::test
