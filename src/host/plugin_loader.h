// The words of a refused plugin: every message starts "cannot load plugin
// <path>: " and then says the cause a plugin author can act on, with the
// loader's own text (dlerror) kept at the end for the details.
#pragma once

#include <string>

#include "host/child_process.h"
#include "host/host_protocol.h"

namespace attncheck {

// What to hand to dlopen for a user's path: a bare "x.so" would be searched
// for in the system library path, so it becomes "./x.so".
std::string dlopen_path_for(const std::string& path);

// Checks in the parent what can be checked without loading: the file exists,
// is a regular file and is readable. "" when fine, else the full message.
std::string plugin_file_problem(const std::string& path);

// The full message for a child's refusal.
std::string load_failure_message(const std::string& path, const host::HelloMessage& hello);

// A loaded v3 plugin's declaration that docs/abi/plugin-abi-v3.md says to
// refuse (unknown bits, kv_formats without its feature, ...): the full
// message, naming the field and its value; "" when it is accepted (and for
// versions 1 and 2, which the child judged).
std::string declaration_refusal(const std::string& path, const host::HelloMessage& hello);

// The full message for a child that died or hung while loading.
std::string load_crash_message(const std::string& path, const std::string& how_it_ended);
// A load past its limits: which one, and the time it used (CPU and wall-clock).
std::string load_timeout_message(const std::string& path, const ChildProcess::Limits& limits,
                                 const ChildProcess::Spent& spent);

}  // namespace attncheck
