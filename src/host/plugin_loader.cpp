#include "host/plugin_loader.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include "host/v3_declaration.h"
#include "text/printable_text.h"

namespace attncheck {

namespace {

std::string prefix(const std::string& path) { return "cannot load plugin " + printable(path) + ": "; }

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// dlerror() texts are glibc's; they are matched only to choose the wording of
// the cause, and always quoted in full.
std::string dlopen_cause(const std::string& dl) {
  if (contains(dl, "wrong ELF class"))
    return "it is built for another word size or architecture (" + dl + ")";
  if (contains(dl, "invalid ELF header") || contains(dl, "file too short") || contains(dl, "not an ELF"))
    return "it is not a shared library (" + dl + ")";
  if (contains(dl, "ELF") && (contains(dl, "machine") || contains(dl, "architecture") || contains(dl, "OS ABI")))
    return "it is built for another architecture (" + dl + ")";
  if (contains(dl, "undefined symbol"))
    return "it needs a symbol that no loaded library provides (" + dl + ")";
  if (contains(dl, "cannot open shared object file"))
    // The plugin itself exists (checked before), so this is one of its dependencies.
    return "a library it depends on cannot be opened (" + dl + ")";
  return "dlopen failed (" + dl + ")";
}

}  // namespace

std::string dlopen_path_for(const std::string& path) {
  return path.find('/') == std::string::npos ? "./" + path : path;
}

std::string plugin_file_problem(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return prefix(path) + "no such file";
    return prefix(path) + std::strerror(errno);
  }
  if (S_ISDIR(st.st_mode)) return prefix(path) + "it is a directory, not a shared library";
  if (!S_ISREG(st.st_mode)) return prefix(path) + "it is not a regular file";
  if (access(path.c_str(), R_OK) != 0) return prefix(path) + "it is not readable (" + std::strerror(errno) + ")";
  return "";
}

namespace {

// The message before escaping: the plugin's reason and dlerror's text are anybody's bytes.
std::string raw_load_failure_message(const std::string& path, const host::HelloMessage& hello) {
  using host::LoadStatus;
  const std::string text(hello.text, strnlen(hello.text, sizeof hello.text));
  switch (hello.status) {
    case LoadStatus::ok: return "";
    case LoadStatus::dlopen_failed: return prefix(path) + dlopen_cause(text);
    case LoadStatus::no_symbol:
      return prefix(path) +
             "it exports none of attncheck_plugin_v3, attncheck_plugin_v2, attncheck_plugin_v1 (declare one "
             "extern \"C\" with default visibility; " +
             text + ")";
    case LoadStatus::null_impl: {
      const std::string reason(hello.reason, strnlen(hello.reason, sizeof hello.reason));
      return prefix(path) + text + "() returned NULL" + (reason.empty() ? std::string() : ": " + reason);
    }
    case LoadStatus::abi_mismatch: {
      const std::string version = text == "attncheck_plugin_v3" ? "3" : text == "attncheck_plugin_v2" ? "2" : "1";
      return prefix(path) + "it reports plugin ABI version " + std::to_string(hello.abi_version) + " from " + text +
             "(), which must report version " + version + " (rebuild it against this attncheck's attncheck/plugin" +
             (version == "1" ? "" : "_v" + version) + ".h)";
    }
    case LoadStatus::null_forward:
      return prefix(path) + "the implementation " + text + "() returns has a NULL forward function";
    case LoadStatus::unknown_features: {
      char bits[32];
      std::snprintf(bits, sizeof bits, "0x%x", hello.features & ~((1u << 11) - 1));
      return prefix(path) + "attncheck_plugin_v2() declares feature bits " + bits +
             " that no ATTNCHECK_FEATURE_* of ABI version 2 names";
    }
  }
  return prefix(path) + "unknown loader status " + std::to_string(static_cast<int>(hello.status));
}

}  // namespace

std::string load_failure_message(const std::string& path, const host::HelloMessage& hello) {
  return printable(raw_load_failure_message(path, hello));
}

std::string declaration_refusal(const std::string& path, const host::HelloMessage& hello) {
  if (hello.abi_version != ATTNCHECK_ABI_VERSION_3) return "";
  const std::string why = v3_declaration_refusal(
      {hello.features, hello.kv_formats, hello.numerics, hello.promises, hello.has_backward != 0});
  return why.empty() ? "" : printable(prefix(path) + why);
}

std::string load_crash_message(const std::string& path, const std::string& how_it_ended) {
  // A signal is a crash; an exit status is usually a runtime refusing to
  // start (a sanitizer-built plugin in a plain attncheck says so on stderr).
  if (how_it_ended.rfind("killed by", 0) == 0) return prefix(path) + "it crashed while loading: " + how_it_ended;
  if (how_it_ended.rfind("exited with", 0) == 0)
    return prefix(path) + "its process ended while loading it (" + how_it_ended + "; see stderr)";
  return prefix(path) + "while loading, its process " + how_it_ended;  // what the supervisor saw
}

std::string load_timeout_message(const std::string& path, const ChildProcess::Limits& limits,
                                 const ChildProcess::Spent& spent) {
  const std::string used = spent.text();
  if (spent.by_wall)
    return prefix(path) + "it did not finish loading within " + std::to_string(limits.wall_ms) +
           " ms of wall-clock time, having used " + used +
           ": it was blocked or sleeping, not computing (raise the limit with --load-wall-timeout-ms)";
  return prefix(path) + "it did not finish loading within " + std::to_string(limits.cpu_ms) +
         " ms of CPU time (used " + used + "; a big library may need longer: raise the limit with --load-timeout-ms)";
}

}  // namespace attncheck
