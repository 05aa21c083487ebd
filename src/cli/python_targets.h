// `check --python MODULE_OR_FILE:FUNCTION`: a Python function checked through
// the Python bridge plugin (plugins/python/, libattncheck_python.so), one
// isolated plugin process per target, told its function through the
// environment variable ATTNCHECK_PYTHON_TARGET. The implementation is named by
// the target text in reports; its source is "python:TARGET".
//
// Example usage (check_command.cpp):
//   std::string error;
//   std::string bridge = python_bridge_path(error);   // "" when not built: error says where it looked
//   PluginOptions o = python_target_options(options, "examples/python/numpy_attention.py:attention");
//   auto impl = load_plugin(bridge, o, error);
#pragma once

#include <string>

#include "host/plugin_host.h"

namespace attncheck {

// The bridge library: $ATTNCHECK_PYTHON_BRIDGE when set, else beside this
// program in the build tree (<dir of attncheck>/plugins/) or the install tree
// (<prefix>/<libdir>/attncheck/). "" and `error` naming every place looked at
// and how to build it when none has it.
std::string python_bridge_path(std::string& error);

// "" when `target` has the form MODULE_OR_FILE:FUNCTION, else the problem.
std::string python_target_problem(const std::string& target);

// `base` with the target in the plugin process's environment and the source label.
PluginOptions python_target_options(const PluginOptions& base, const std::string& target);

}  // namespace attncheck
