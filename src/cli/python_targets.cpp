#include "cli/python_targets.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#ifndef ATTNCHECK_INSTALL_LIBDIR
#define ATTNCHECK_INSTALL_LIBDIR "lib"  // relative to the install prefix (CMAKE_INSTALL_LIBDIR)
#endif
#ifndef ATTNCHECK_INSTALL_FULL_LIBDIR
#define ATTNCHECK_INSTALL_FULL_LIBDIR "/usr/local/lib"
#endif

namespace attncheck {

namespace {

constexpr const char* kBridgeFile = "libattncheck_python.so";

std::filesystem::path program_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

}  // namespace

std::string python_bridge_path(std::string& error) {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("ATTNCHECK_PYTHON_BRIDGE"); env && *env) {
    if (::access(env, R_OK) == 0) return env;
    error = std::string("ATTNCHECK_PYTHON_BRIDGE=") + env + ": no such readable file";
    return "";
  }
  std::vector<fs::path> places;
  if (const fs::path dir = program_dir(); !dir.empty()) {
    places.push_back(dir / "plugins" / kBridgeFile);                                   // build tree
    places.push_back(dir.parent_path() / ATTNCHECK_INSTALL_LIBDIR / "attncheck" / kBridgeFile);  // install tree
  }
  places.push_back(fs::path(ATTNCHECK_INSTALL_FULL_LIBDIR) / "attncheck" / kBridgeFile);
  std::string looked;
  for (const fs::path& p : places) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
    looked += (looked.empty() ? "" : ", ") + p.string();
  }
  error = std::string("--python needs the Python bridge ") + kBridgeFile + ", which is not built: looked in " +
          looked + " (and ATTNCHECK_PYTHON_BRIDGE is not set). Build it with\n"
          "  sudo apt-get install -y python3-dev python3-numpy\n"
          "  cmake -S . -B build -DATTNCHECK_WITH_PYTHON=ON && cmake --build build --target attncheck_python_plugin";
  return "";
}

std::string python_target_problem(const std::string& target) {
  const auto colon = target.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == target.size())
    return "--python " + target + ": expected MODULE_OR_FILE:FUNCTION, e.g. "
           "examples/python/numpy_attention.py:attention or mypackage.attention:forward";
  return "";
}

PluginOptions python_target_options(const PluginOptions& base, const std::string& target) {
  PluginOptions o = base;
  o.environment.emplace_back("ATTNCHECK_PYTHON_TARGET", target);
  o.source = "python:" + target;
  return o;
}

}  // namespace attncheck
